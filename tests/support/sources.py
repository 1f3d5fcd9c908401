"""Raw inputs the loader tests feed the readers: a graph around Barack Obama as TSV (Freebase paths and
mids), a names file and N-Triples, each with repeated lines and awkward names; and one name in both
Unicode normal forms."""

from __future__ import annotations

import unicodedata

TSV = (
    "head\trelation\ttail\n"
    "/m/0obama\t/people/person/place_of_birth\t/m/0honolulu\n"
    "/m/0obama\t/people/person/spouse_s\t/m/0marriage\n"
    "/m/0marriage\t/people/marriage/spouse\t/m/0michelle\n"
    "/m/0marriage\t/people/marriage/from\t1992-10-03\n"
    "/m/0obama\t/people/person/place_of_birth\t/m/0honolulu\n"  # repeated: stored once
    "Quote 'single', \"double\"\tcommon.topic.alias\tBack`tick;semi,comma\\slash\n"
    "m.0honolulu\tlocation.location.containedby\tm.0hawaii\n"
    "/m/0obama\t/people/person/spouse_s\t/m/0marriage\n"  # repeated again
    "2001\tcommon.topic.notable_for\tm.0obama\n"  # a year as a head is not a literal
)
NAMES = '/m/0obama\tObama (old)\n/m/0obama\tBarack Obama\n/m/0honolulu\tHonolulu\n/m/0michelle\tMichelle Obama\nm.0hawaii\tHawaii, "the" state\n'
NT = (
    "\n".join(
        [
            '<http://rdf.freebase.com/ns/m.0obama> <http://rdf.freebase.com/ns/type.object.name> "Barack Obama"@en .',
            '<http://rdf.freebase.com/ns/m.0obama> <http://rdf.freebase.com/ns/type.object.name> "Obama again"@en .',
            '<http://rdf.freebase.com/ns/m.0obama> <http://rdf.freebase.com/ns/people.person.date_of_birth> "1961-08-04"^^<http://www.w3.org/2001/XMLSchema#date> .',
            "<http://rdf.freebase.com/ns/m.0obama> <http://rdf.freebase.com/ns/people.person.spouse_s> <http://rdf.freebase.com/ns/m.0marriage> .",
            "<http://rdf.freebase.com/ns/m.0obama> <http://rdf.freebase.com/ns/people.person.spouse_s> <http://rdf.freebase.com/ns/m.0marriage> .",
            "<http://rdf.freebase.com/ns/m.0marriage> <http://rdf.freebase.com/ns/people.marriage.spouse> <http://rdf.freebase.com/ns/m.0michelle> .",
            '<http://rdf.freebase.com/ns/m.0michelle> <http://rdf.freebase.com/ns/type.object.name> "Michelle Obama"@en .',
            '<http://rdf.freebase.com/ns/m.0obama> <http://rdf.freebase.com/ns/common.topic.description> "line one\\nline two, \\"quoted\\"\\ttab\\rcr"@en .',
            '<http://rdf.freebase.com/ns/m.0obama> <http://rdf.freebase.com/ns/common.topic.description> "line one\\nline two, \\"quoted\\"\\ttab\\rcr"@en .',
            '<http://rdf.freebase.com/ns/m.0obama> <http://rdf.freebase.com/ns/common.topic.alias> "Barry"@en .',
            '<http://rdf.freebase.com/ns/m.0obama> <http://rdf.freebase.com/ns/common.topic.alias> "Obama"@de .',
        ]
    )
    + "\n"
)

NFD = unicodedata.normalize("NFD", "Beyoncé")
NFC = unicodedata.normalize("NFC", "Beyoncé")
