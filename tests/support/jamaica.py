"""Jamaica and France: capitals, languages, birthplaces and a postal-code CVT, with ten WebQSP-style
questions about them (the retrieve pipeline's graph, and the labelling and registry tests')."""

TRIPLES = [
    ("Jamaica", "location.country.official_language", "Jamaican English"),
    ("Jamaica", "location.country.languages_spoken", "Jamaican Creole English Language"),
    ("Jamaica", "location.country.capital", "Kingston"),
    ("Jamaica", "location.location.containedby", "Caribbean"),
    ("Kingston", "location.location.containedby", "Jamaica"),
    ("Kingston", "location.citytown.postal_codes", "m.0abc1"),
    ("m.0abc1", "location.postal_code.country", "Jamaica"),
    ("Usain Bolt", "people.person.nationality", "Jamaica"),
    ("Usain Bolt", "people.person.place_of_birth", "Sherwood Content"),
    ("Sherwood Content", "location.location.containedby", "Jamaica"),
    ("France", "location.country.capital", "Paris"),
    ("France", "location.country.official_language", "French"),
    ("Paris", "location.location.containedby", "France"),
    ("Emmanuel Macron", "people.person.nationality", "France"),
    ("Emmanuel Macron", "people.person.place_of_birth", "Amiens"),
]
QUESTIONS = [
    {"id": f"Q-{i}", "question": q, "q_entity": [t], "answer": a, "a_entity": a}
    for i, (q, t, a) in enumerate(
        [
            ("what language do people in jamaica speak?", "Jamaica", ["Jamaican English"]),
            ("what is the capital of jamaica?", "Jamaica", ["Kingston"]),
            ("where was usain bolt born?", "Usain Bolt", ["Sherwood Content"]),
            ("what is the capital of france?", "France", ["Paris"]),
            ("what language is spoken in france?", "France", ["French"]),
            ("where was emmanuel macron born?", "Emmanuel Macron", ["Amiens"]),
            ("what country is usain bolt from?", "Usain Bolt", ["Jamaica"]),
            ("what country is emmanuel macron from?", "Emmanuel Macron", ["France"]),
            ("where is kingston?", "Kingston", ["Jamaica"]),
            ("what region contains jamaica?", "Jamaica", ["Caribbean"]),
        ]
    )
]
