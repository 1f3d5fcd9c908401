"""The torch-free route of a cold `kgdb ask`: the numpy MiniLM encoder gives sentence-transformers'
vectors, the numpy cosine scorer and the numpy portable RRP ranker give their torch modules' scores,
and encoding a few texts imports no torch. A plain `kgdb ask` imports neither torch nor the Arrow
kernels the neo4j driver would load, and of the command modules only its own."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import numpy as np
import pytest

from kgdb.config import DEFAULT_EMBEDDING_MODEL
from kgdb.embeddings import LIGHT_MAX_TEXTS, Embedder, resolve_model_path
from kgdb.scoring.retrievers import cosine_scores
from kgdb.text_encoder import NumpyBertEncoder, read_safetensors
from support.cli import MODEL_SIDE, run_python


def sample_texts() -> list[str]:
    rng = random.Random(7)
    words = [
        "the",
        "capital",
        "of",
        "France",
        "is",
        "Paris",
        "people.person.place_of_birth",
        "film",
        "directed_by",
        "Zürich",
        "naïve",
        "café",
        "東京",
        "日本",
        "Москва",
        "столица",
        "مرحبا",
        "😀",
        "Ærø",
        "ﬁne",
        "½",
        "what",
        "who",
        "whom",
        "1990",
        "m.0kgdb_x",
        "\t",
        "tab",
    ]
    texts = [
        "What is the capital of France?",
        "",
        " ",
        "a",
        "people person place of birth",
        "Zürich naïve café",
        "東京 is in 日本",
        "Москва — столица России",
        "😀 only emoji 😀",
        "  leading and trailing spaces  ",
        "UPPER case Text",
        "punctuation!!! ... ??? (brackets) [x] {y}",
        "m.0abc12 ; g.11b6 ; people person",
    ]
    texts += [" ".join(rng.choice(words) for _ in range(rng.randint(1, 40))) for _ in range(16)]
    texts += [" ".join(rng.choice(words) for _ in range(rng.randint(300, 500))) for _ in range(2)]  # truncated
    texts += ["word " * 600]
    return texts


@pytest.fixture(scope="module")
def numpy_encoder() -> NumpyBertEncoder:
    return NumpyBertEncoder(resolve_model_path(DEFAULT_EMBEDDING_MODEL))


def test_numpy_encoder_matches_sentence_transformers(numpy_encoder):
    from sentence_transformers import SentenceTransformer

    texts = sample_texts()
    ids = numpy_encoder.token_ids(texts)
    assert max(len(i) for i in ids) == numpy_encoder.max_length == 256  # long texts really are truncated
    st = SentenceTransformer(resolve_model_path(DEFAULT_EMBEDDING_MODEL), device="cpu")
    assert st.max_seq_length == numpy_encoder.max_length
    want = st.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    got = numpy_encoder.encode(texts)
    assert got.dtype == np.float32 and got.shape == want.shape == (len(texts), 384)
    assert float(np.abs(got - want).max()) < 1e-5
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    # one text alone (no padding) is the same vector as inside a padded batch
    alone = numpy_encoder.encode([texts[0]])[0]
    assert float(np.abs(alone - got[0]).max()) < 1e-6


def test_the_mapped_weights_are_the_files_tensors():
    from safetensors import safe_open

    path = resolve_model_path(DEFAULT_EMBEDDING_MODEL) + "/model.safetensors"
    mapped = read_safetensors(path)
    with safe_open(path, framework="numpy") as f:
        names = list(f.keys())  # noqa: SIM118 (safe_open has keys(), no __iter__)
        assert sorted(mapped) == sorted(names)
        for name in names:
            want = f.get_tensor(name)
            assert mapped[name].dtype == want.dtype and np.array_equal(mapped[name], want), name


def test_embedder_rule_short_calls_numpy_long_calls_sentence_transformers():
    """The one rule: <= LIGHT_MAX_TEXTS texts of the default model -> numpy; more -> sentence-transformers."""
    emb = Embedder(DEFAULT_EMBEDDING_MODEL, device="cpu")
    assert emb.dim == 384
    few = emb.encode(["who directed titanic?", "film film directed by"])
    assert emb._model is None  # sentence-transformers not loaded for a short call
    texts = [f"entity number {i} of the graph" for i in range(LIGHT_MAX_TEXTS + 1)]
    bulk = emb.encode(texts)
    assert emb._model is not None
    assert float(np.abs(bulk[:50] - emb.encode(texts[:50])).max()) < 1e-5
    assert (
        float(
            np.abs(
                few - emb.model.encode(["who directed titanic?", "film film directed by"], normalize_embeddings=True)
            ).max()
        )
        < 1e-5
    )


def test_a_text_encoded_alone_is_encoded_once_and_its_vector_is_the_callers_own():
    emb = Embedder(DEFAULT_EMBEDDING_MODEL, device="cpu")
    question = "where was the wife of barack obama born?"
    first = emb.encode([question])
    first[0, :] = 0.0  # the caller's array: the kept vector stays as encoded
    again = emb.encode([question])
    assert emb._single.cache_info().hits == 1 and emb._single.cache_info().misses == 1
    assert np.array_equal(again, emb._encode_texts([question], False)) and abs(float(again[0] @ again[0]) - 1) < 1e-5
    assert emb.encode([question, "who is his wife?"]).shape == (2, 384)  # a batch is encoded as before
    assert emb._single.cache_info().misses == 1


def test_numpy_cosine_equals_the_torch_retriever():
    import torch

    from kgdb.models.base import TensorTables
    from kgdb.models.features import build_tensors
    from kgdb.models.retrievers.cosine import CosineRetriever

    rng = np.random.default_rng(3)
    n_ent, n_rel, d = 40, 7, 16
    entity = rng.normal(size=(n_ent, d)).astype(np.float32)
    entity[5] = 0.0  # a CVT row
    relation = rng.normal(size=(n_rel, d)).astype(np.float32)
    entity_idx = rng.permutation(n_ent)[:25]
    head, tail = rng.integers(0, 25, size=300), rng.integers(0, 25, size=300)
    rel = rng.integers(0, n_rel, size=300)
    head[-1], rel[-1], tail[-1] = head[0], rel[0], tail[0]  # a duplicate triple must tie exactly
    q = rng.normal(size=d).astype(np.float32)
    q /= np.linalg.norm(q)

    got = cosine_scores(entity, relation, head, rel, tail, entity_idx, q)
    tables = TensorTables.from_numpy(entity, relation)
    x = build_tensors(
        tables,
        head=head,
        relation=rel,
        tail=tail,
        entity_idx=entity_idx,
        topic=np.array([0]),
        is_cvt=np.zeros(25, bool),
        question_embedding=q,
    )
    with torch.no_grad():
        want = CosineRetriever(embedding_dim=d).eval()(x).numpy()
    assert got.dtype == np.float32
    assert float(np.abs(got - want).max()) < 1e-6
    assert got[-1] == got[0]
    assert list(np.argsort(-got, kind="stable")[:50]) == list(np.argsort(-want, kind="stable")[:50])


def test_numpy_path_ranker_equals_the_torch_ranker_and_refuses_weights_that_do_not_fit():
    """The shipped portable ranker as plain `kgdb ask` scores it (numpy, no torch) against its torch
    module: 1-3 hop candidates with padding, word bags of several sizes, an empty one."""
    import json

    import torch

    from kgdb.models.checkpoints import read_weights
    from kgdb.models.default import shipped_checkpoint
    from kgdb.rrp.models.path_ranker import PathRanker
    from kgdb.rrp.scoring import NumpyPathRanker, RankerConfig
    from kgdb.scoring.weights import read_arrays

    folder = shipped_checkpoint("rrp-ranker")
    cfg = RankerConfig(**json.loads((folder / "config.json").read_text())["model"])
    rng = np.random.default_rng(0)
    table = rng.normal(size=(50, 384)).astype(np.float32)
    served = NumpyPathRanker(cfg, read_arrays(folder / "model.safetensors"), table)
    module = PathRanker(cfg, torch.from_numpy(table))
    module.load_state_dict(
        read_weights(folder / "model.safetensors"), strict=False
    )  # the table is the graph's, not stored
    module.eval()
    for n, words in ((1, [3]), (40, [5, 17, 4000]), (300, [])):
        tokens = rng.integers(1, 101, size=(n, 3))
        tokens[np.arange(3)[None] >= rng.integers(1, 4, n)[:, None]] = 0  # 1 to 3 hops, 0-padded
        dense = rng.normal(size=(n, cfg.dense)).astype(np.float32)
        q = rng.normal(size=384).astype(np.float32)
        got = served.scores(q, words, tokens, dense)
        with torch.no_grad():
            want = module(
                torch.from_numpy(q)[None],
                torch.tensor(words, dtype=torch.long),
                torch.tensor([0]),
                torch.from_numpy(tokens),
                torch.from_numpy(dense),
                torch.zeros(n, dtype=torch.long),
            ).numpy()
        assert got.dtype == np.float32 and got.shape == (n,)
        assert float(np.abs(got - want).max()) < 1e-4
        assert int(np.argmax(got)) == int(np.argmax(want))
    with pytest.raises(ValueError, match="outside the relation vocabulary"):
        served.scores(q, [1], np.array([[101, 0, 0]]), np.zeros((1, cfg.dense), np.float32))
    weights = read_arrays(folder / "model.safetensors")
    with pytest.raises(KeyError, match=r"\['hop.weight'\] missing"):
        NumpyPathRanker(cfg, {k: v for k, v in weights.items() if k != "hop.weight"}, table)
    with pytest.raises(RuntimeError, match=r"size mismatch: question.weight"):
        NumpyPathRanker(cfg, weights, table[:, :100])
    with pytest.raises(ValueError, match="only a portable ranker"):
        NumpyPathRanker(RankerConfig(), weights, table)


def test_short_encoding_imports_no_torch():
    code = (
        "import sys\nfrom kgdb.embeddings import get_embedder\n"
        "v = get_embedder().encode(['what is the capital of france?'])\n"
        f"print(v.shape, sorted(m for m in {MODEL_SIDE!r} if m in sys.modules))"
    )
    out = run_python(code, {})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(1, 384) []"


# What a plain `kgdb ask` must not import: the model side, and what the neo4j driver (6.x) would load
# for its DataFrame and Arrow export (pyarrow.compute alone costs a cold ask ~0.3 s).
NOT_FOR_ASK = (*MODEL_SIDE, "pandas", "pyarrow", "pyarrow.compute")


def test_a_plain_ask_imports_neither_torch_nor_the_drivers_arrow_support():
    """`kgdb ask` as the command runs it, up to the connection (a port nothing listens on): the CLI,
    the answering pipeline and the driver are imported by then; then RRP's reasoner, found through its
    entry point as plain ask finds it, and the question's encoding. None of them pulls torch or Arrow,
    and of the command modules only `kgdb.cli.ask` is imported."""
    code = (
        "import sys\nfrom kgdb.cli import main\n"
        "sys.argv = ['kgdb', '--uri', 'bolt://127.0.0.1:1', 'ask', 'What is the capital of France?', '--no-write']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    print('EXIT', exc.code)\n"
        "from kgdb.qa.reasoners import reasoner_kind\nreasoner_kind('rrp')\n"
        "from kgdb.embeddings import get_embedder\nget_embedder().encode(['what is the capital of france?'])\n"
        f"print('HEAVY', sorted(m for m in {NOT_FOR_ASK!r} if m in sys.modules))\n"
        "print('COMMANDS', sorted(m for m in sys.modules if m.startswith('kgdb.cli.')))"
    )
    out = run_python(code, {"KGDB_NEO4J_PASSWORD": "unused"})
    assert out.returncode == 0, out.stderr
    assert "cannot reach Neo4j at bolt://127.0.0.1:1" in out.stderr and "EXIT 1" in out.stdout, out.stdout + out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[-2] == "HEAVY []", lines[-2]
    assert lines[-1] == "COMMANDS ['kgdb.cli.ask', 'kgdb.cli.common']", lines[-1]


def test_the_driver_imported_without_arrow_leaves_pyarrow_to_kgdb():
    """The parquet loaders and caches import pyarrow after the driver as usual; a process that had
    imported pyarrow first gives the driver its Arrow support."""
    code = (
        "import kgdb.cypher, neo4j._optional_deps as deps\n"
        "import pyarrow as pa, pyarrow.compute as pc, pyarrow.parquet as pq\n"
        "print(deps.pa is None, deps.pa_compute is None, pc.sum(pa.array([1, 2, 3])).as_py())"
    )
    out = run_python(code, {})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "6"]
    out = run_python("import pyarrow, kgdb.cypher, neo4j._optional_deps as deps\nprint(deps.pa is pyarrow)", {})
    assert out.returncode == 0 and out.stdout.strip() == "True", out.stderr


def test_each_command_line_imports_the_modules_of_its_command():
    """`kgdb.cli.MODULES_OF_COMMAND` names, for each top-level command, exactly the modules that add
    its commands (else `main()` would not find them), and the global options that take a value are
    those `modules_for` skips."""
    import typer

    from kgdb.cli import COMMAND_MODULES, MODULES_OF_COMMAND, VALUE_OPTIONS, app, modules_for

    def modules_of(sub_app: typer.Typer) -> set[str]:
        found = {info.callback.__module__ for info in sub_app.registered_commands if info.callback}
        if isinstance(sub_app.info.cls, type) and sub_app.info.cls.__module__.startswith("kgdb.cli."):
            found.add(sub_app.info.cls.__module__)  # a group that makes its commands itself (`kgdb train KIND`)
        for group in sub_app.registered_groups:
            found |= modules_of(group.typer_instance)
        return found

    defined = {
        info.name or info.callback.__name__.replace("_", "-"): {info.callback.__module__}
        for info in app.registered_commands
        if info.callback
    }
    defined |= {group.name: modules_of(group.typer_instance) for group in app.registered_groups}
    assert defined == {name: {f"kgdb.cli.{m}" for m in modules} for name, modules in MODULES_OF_COMMAND.items()}
    assert {m for modules in MODULES_OF_COMMAND.values() for m in modules} == set(COMMAND_MODULES)

    root = typer.main.get_command(app)
    takes_value = {opt for p in root.params if not getattr(p, "is_flag", True) for opt in p.opts}
    assert takes_value == VALUE_OPTIONS
    assert modules_for(["--uri", "bolt://h:1", "-v", "ask", "q"]) == ("ask",)
    assert modules_for(["--uri=bolt://h:1", "eval", "qa"]) == ("evaluate", "retrievers")
    assert modules_for(["--help"]) == modules_for(["no-such-command"]) == modules_for([]) == COMMAND_MODULES


def test_the_collector_is_back_once_start_up_is_over():
    from kgdb.cli import START_UP_S

    code = (
        "import gc, sys, time\nfrom kgdb.cli import main\nsys.argv = ['kgdb', '--version']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"off = not gc.isenabled()\ntime.sleep({START_UP_S} + 0.5)\nprint('OFF THEN ON', off, gc.isenabled())"
    )
    out = run_python(code, {})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "OFF THEN ON True True"


def test_a_model_that_is_not_here_fails_without_asking_the_hub_whatever_was_imported_first():
    """huggingface_hub reads HF_HUB_OFFLINE once, at import: a process that imported it before the
    first Embedder (training, the Python API) must still not query the hub for a model that is not
    on disk (offline that query retries for over a minute). The hub is pointed at a local server that
    records every request."""
    import http.server
    import threading

    seen: list[str] = []

    class Hub(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            seen.append(self.path)
            self.send_response(404)
            self.end_headers()

        do_HEAD = do_GET

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        code = (
            "import torch_geometric  # imports transformers, which reads HF_HUB_OFFLINE there and then\n"
            "from kgdb.embeddings import Embedder\nfrom kgdb.errors import KgdbError\n"
            "try:\n    Embedder('someone/no-such-model')\nexcept KgdbError as exc:\n    print('refused:', exc)\n"
        )
        env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
        env["HF_ENDPOINT"] = f"http://127.0.0.1:{server.server_address[1]}"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    finally:
        server.shutdown()
    assert out.returncode == 0, out.stderr
    assert "refused: cannot load embedding model 'someone/no-such-model'" in out.stdout, out.stdout
    assert not [path for path in seen if "no-such-model" in path], seen  # (a library may ping the hub for itself)


def test_the_torch_free_facts_match_the_registry():
    from kgdb.models import registry
    from kgdb.pipeline.model_choice import UNTRAINED_BUILTINS
    from kgdb.scoring.twins import TRAINABLE_BUILTINS

    assert {
        name for name in ("cosine", "cosine-dde", "subgraphrag", "rapl") if registry.get(name).trainable
    } == TRAINABLE_BUILTINS
    assert {name for name in registry.names() if not registry.get(name).trainable} >= UNTRAINED_BUILTINS
