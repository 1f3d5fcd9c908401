"""A country whose relation steps are too big to read whole, as in a real Freebase subset (the United
States has millions of `people.person.nationality` edges), and questions about it: what RRP's
enumeration and grounding do on such a hub (docs/scale.md, "Hub topics").

    .venv/bin/python benchmarks/hub_graph.py --degree 1000000 --out /tmp/hub
    kgdb load freebase-subset /tmp/hub/triples.tsv --bulk      # on a server of its own: --bulk replaces its database
    .venv/bin/python benchmarks/fetch_memory.py --questions /tmp/hub/questions.jsonl --split all --fetch-n 0
    KGDB_RRP_STEP_SCAN=1000000000 .venv/bin/python benchmarks/fetch_memory.py --questions /tmp/hub/questions.jsonl --split all --fetch-n 0

The hub, Freedonia, has `--degree` people of its nationality, a fifth as many towns inside it (each
person born in one of those, one in five of them listed), and one capital, currency, official
language and form of government. The questions ask for those single facts from Freedonia, for
Freedonia from its capital, and for a person's birthplace and its country (two hops, the second into
the hub). Names are the ids. Written as a stream; the same --degree gives the same bytes.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

FACTS = [
    ("Freedonia", "location.country.capital", "Freedonia City"),
    ("Freedonia City", "location.location.containedby", "Freedonia"),
    ("Freedonia", "location.country.currency_used", "Freedonian dollar"),
    ("Freedonia", "location.country.official_language", "Freedonian"),
    ("Freedonia", "location.country.form_of_government", "Dictatorship"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--degree", type=int, default=1_000_000, help="people of Freedonia's nationality (the biggest step)"
    )
    ap.add_argument("--out", type=Path, required=True, help="folder for triples.tsv and questions.jsonl")
    args = ap.parse_args()
    if args.degree < 10:
        ap.error("--degree must be 10 or more")
    args.out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    people, towns = args.degree, max(1, args.degree // 5)
    person = lambda i: f"Person {i:09d}"  # noqa: E731
    town = lambda i: f"Town {i:09d}"  # noqa: E731
    birthplace = {}
    with open(args.out / "triples.tsv", "w") as f:
        f.writelines(f"{h}\t{r}\t{t}\n" for h, r, t in FACTS)
        for i in range(people):
            f.write(f"{person(i)}\tpeople.person.nationality\tFreedonia\n")
        for i in range(towns):
            f.write(f"{town(i)}\tlocation.location.containedby\tFreedonia\n")
        for i in range(0, people, 5):
            birthplace[i] = town(rng.randrange(towns))
            f.write(f"{person(i)}\tpeople.person.place_of_birth\t{birthplace[i]}\n")
    questions = [
        ("what currency is used in freedonia", ["Freedonian dollar"], "Freedonia"),
        ("what is the capital of freedonia", ["Freedonia City"], "Freedonia"),
        ("what language do they speak in freedonia", ["Freedonian"], "Freedonia"),
        ("what kind of government does freedonia have", ["Dictatorship"], "Freedonia"),
        ("what country is freedonia city the capital of", ["Freedonia"], "Freedonia City"),
        (f"where was {person(5)} born", [birthplace[5]], person(5)),
        (f"what country was {person(10)} born in", ["Freedonia"], person(10)),
    ]
    with open(args.out / "questions.jsonl", "w") as f:  # WebQSP's layout (`kgdb load questions` reads it)
        for n, (text, answers, topic) in enumerate(questions):
            f.write(
                json.dumps(
                    {"id": f"hub-{n}", "question": text, "q_entity": [topic], "a_entity": answers, "answer": answers}
                )
                + "\n"
            )
    print(
        f"wrote {len(FACTS) + people + towns + len(birthplace):,} triples to {args.out / 'triples.tsv'} "
        f"(Freedonia: {people:,} nationality and {towns:,} containedby relationships) and {len(questions)} questions "
        f"to {args.out / 'questions.jsonl'}"
    )


if __name__ == "__main__":
    main()
