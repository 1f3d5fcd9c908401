"""A small Freebase-shaped graph around Barack Obama, as the writer loads it: a CVT marriage record, two
relations between one pair, an unnamed mid."""

TRIPLES = [
    ("Barack Obama", "people.person.place_of_birth", "Honolulu"),
    ("Barack Obama", "people.person.nationality", "United States of America"),
    ("Barack Obama", "people.person.date_of_birth", "1961-08-04"),
    ("Barack Obama", "people.person.spouse_s", "m.0kgdb_marriage"),
    ("m.0kgdb_marriage", "people.marriage.spouse", "Michelle Obama"),
    ("m.0kgdb_marriage", "people.marriage.from", "1992-10-03"),
    ("Honolulu", "location.location.containedby", "United States of America"),
    ("Honolulu", "location.location.containedby", "Hawaii"),
    ("Hawaii", "location.location.containedby", "United States of America"),
    ("United States of America", "location.country.capital", "Washington, D.C."),
    # a second, different relation between the same pair stays a distinct relationship
    ("Washington, D.C.", "location.location.containedby", "United States of America"),
    ("Washington, D.C.", "base.capital.of", "United States of America"),
    ("Michelle Obama", "people.person.place_of_birth", "Chicago"),
    ("Chicago", "location.location.containedby", "United States of America"),
    ("m.0kgdb_unnamed", "location.location.containedby", "Hawaii"),
]
