"""A hand-made film graph: two films by one director, his birthplace, nationality and that country's capital.
Enough for a question read in two steps ("where was the director of avatar born?") and for plain ones."""

FILMS = [
    ("Avatar", "film.film.directed_by", "James Cameron"),
    ("Titanic", "film.film.directed_by", "James Cameron"),
    ("Avatar", "film.film.initial_release_date", "2009-12-18"),
    ("James Cameron", "people.person.place_of_birth", "Kapuskasing"),
    ("James Cameron", "people.person.nationality", "Canada"),
    ("Kapuskasing", "location.location.containedby", "Canada"),
    ("Canada", "location.country.capital", "Ottawa"),
]
