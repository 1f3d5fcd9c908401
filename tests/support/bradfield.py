"""Capitals, languages and birthplaces in Jamaica and France, and the awards of John Bradfield (designer
of the Sydney Harbour Bridge) reached through CVT award records: the graph `kgdb ask` and the
extractive reasoner are tested on."""

TRIPLES = [
    ("Jamaica", "location.country.capital", "Kingston"),
    ("Jamaica", "location.country.official_language", "Jamaican English"),
    ("Jamaica", "location.location.containedby", "Caribbean"),
    ("Kingston", "location.location.containedby", "Jamaica"),
    ("Usain Bolt", "people.person.nationality", "Jamaica"),
    ("Usain Bolt", "people.person.place_of_birth", "Sherwood Content"),
    ("France", "location.country.capital", "Paris"),
    ("France", "location.country.official_language", "French"),
    ("Sydney Harbour Bridge", "architecture.structure.designer", "John Bradfield"),
    ("John Bradfield", "award.award_winner.awards_won", "m.0aw1"),
    ("m.0aw1", "award.award_honor.award", "Telford Medal"),
    ("John Bradfield", "award.award_winner.awards_won", "m.0aw2"),
    ("m.0aw2", "award.award_honor.award", "Peter Nicol Russell Medal"),
    ("John Bradfield", "people.person.place_of_birth", "Sandgate"),
]

# Questions about it, in the WebQSP layout (`kgdb eval qa --questions`).
QUESTIONS = [
    {"id": "Q-1", "question": "what is the capital of jamaica?", "q_entity": ["Jamaica"], "answer": ["Kingston"]},
    {"id": "Q-2", "question": "what is the capital of france?", "q_entity": ["France"], "answer": ["Paris"]},
    {"id": "Q-3", "question": "where was usain bolt born?", "q_entity": ["Usain Bolt"], "answer": ["Sherwood Content"]},
    # two raw hops through a CVT award record
    {
        "id": "Q-4",
        "question": "what awards did john bradfield win?",
        "q_entity": ["John Bradfield"],
        "answer": ["Telford Medal", "Peter Nicol Russell Medal"],
    },
]


def bradfield_graph(kept_graph, tmp_path):
    """(graph, settings): this graph, kept loaded across tests, with the test's own cache, checkpoints and runs
    folders and no LLM configured."""
    graph = kept_graph(TRIPLES)
    settings = graph.settings.with_overrides(
        cache_dir=tmp_path / "cache", checkpoints_dir=tmp_path / "ckpt", runs_dir=tmp_path / "runs", llm_model=None
    )
    return graph, settings
