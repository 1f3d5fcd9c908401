"""The reliability diagram and the risk-coverage curve of the answer model's confidence, as PNGs, from the
answer rows `kgdb eval rrp --rows` writes, judged by the answer model (default: the one shipped with kgdb), the
way `kgdb eval rrp` judges them; a question without a candidate has confidence 0 and counts as wrong.

    kgdb eval rrp --questions $KGDB_DATA/webqsp/questions.jsonl --split test --rows webqsp-test.jsonl
    python benchmarks/confidence_plots.py --rows "WebQSP test=webqsp-test.jsonl" --rows "CWQ test=cwq-test.jsonl" \\
        --out docs/img

Prints the figures and writes `<out>/confidence-reliability.png` and `<out>/confidence-risk-coverage.png`;
needs matplotlib (`pip install -e ".[bench]"`).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def figures_of(path: Path, model, questions: int | None) -> dict:
    """The confidence figures of one rows file; `questions`: the split's size, for those without a row."""
    from kgdb.qa.confidence import CURVE, risk_coverage, summary
    from kgdb.rrp.answer_model import judge
    from kgdb.rrp.answer_training import read_rows

    confidence, right = [], []
    for r in read_rows([path]):
        if not len(r.x):
            confidence.append(0.0)
            right.append(False)
            continue
        j = judge(model, r.x)
        confidence.append(j.confidence)
        right.append(bool(r.right[j.order[0]]))
    missing = (questions or len(confidence)) - len(confidence)  # retrieval failed: no row was written
    confidence += [0.0] * missing
    right += [False] * missing
    figures = summary(confidence, right, model.min_confidence)
    figures["risk_coverage_curve"] = risk_coverage(confidence, right, CURVE)
    figures["hit1"] = 100 * sum(right) / max(len(right), 1)
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--rows", action="append", required=True, help="LABEL=PATH[:N] of a `kgdb eval rrp --rows` file (N: questions)"
    )
    ap.add_argument("--model", type=Path, help="answer model folder (default: the one shipped with kgdb)")
    ap.add_argument("--out", type=Path, required=True, help="folder for the two PNGs")
    args = ap.parse_args()
    from kgdb.rrp.answer_model import DEFAULT_DIR, AnswerModel

    model = AnswerModel.load(args.model or DEFAULT_DIR)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = []
    for item in args.rows:
        label, _, spec = item.partition("=")
        path, _, n = spec.partition(":")
        f = figures_of(Path(path), model, int(n) if n else None)
        sets.append((label, f))
        rc = ", ".join(f"{c}% {h:.1f}" for c, h in f["risk_coverage"].items())
        print(
            f"{label}: n {f['n']}, Hit@1 {f['hit1']:.2f}, AUROC {f['auroc']:.3f}, ECE {f['ece']:.3f}; "
            f"not sure below {f['threshold']}: {f['unsure_wrong']:.1f}% of wrong, {f['unsure_right']:.1f}% of right; "
            f"Hit@1 of the most confident {rc}"
        )
    args.out.mkdir(parents=True, exist_ok=True)

    fig, axes = plt.subplots(1, len(sets), figsize=(4.2 * len(sets), 4.2), squeeze=False)
    for ax, (label, f) in zip(axes[0], sets):
        bins = f["reliability"]
        ax.bar(
            [(b["low"] + b["high"]) / 2 for b in bins],
            [b["accuracy"] for b in bins],
            width=[b["high"] - b["low"] for b in bins],
            edgecolor="black",
            alpha=0.7,
            label="Hit@1 in the bin",
        )
        ax.plot([0, 1], [0, 1], "k--", lw=1, label="calibrated")
        for b in bins:
            ax.annotate(str(b["n"]), ((b["low"] + b["high"]) / 2, b["accuracy"]), ha="center", va="bottom", fontsize=7)
        ax.set(xlim=(0, 1), ylim=(0, 1.05), xlabel="confidence of the first answer", ylabel="share right")
        ax.set_title(f"{label}: ECE {f['ece']:.3f}, AUROC {f['auroc']:.3f}", fontsize=9)
        ax.legend(loc="upper left", fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out / "confidence-reliability.png", dpi=120)

    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    for label, f in sets:
        curve = f["risk_coverage_curve"]
        ax.plot([int(c) for c in curve], list(curve.values()), marker="o", ms=3, label=label)
    ax.set(xlabel="coverage: the most confident % of questions", ylabel="Hit@1 of those (%)", xlim=(0, 101))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out / "confidence-risk-coverage.png", dpi=120)
    print(f"wrote {args.out / 'confidence-reliability.png'} and {args.out / 'confidence-risk-coverage.png'}")


if __name__ == "__main__":
    main()
