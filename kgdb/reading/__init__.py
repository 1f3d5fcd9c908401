"""Reading a question: the one stage that looks at its text.

`read_question(text)` returns a frozen `QuestionReading` (`question`): the mentions linking looks up
(`mentions`), the words written as names (`words`), the literal constraints and the answer-type cue
(`constraints`), and, on demand, the composed sub-question around a topic's name (`composition`) and the
encodings the models read. Linking adds its candidates and the chosen topics (`QuestionReading.linked`);
retrieval, planning and answering then read the question only through it. `names` holds the rules that
compare a name with the words that mention it, which linking and the planners share.

Pure text: no database, no torch (import-linter contract).
"""

from kgdb.reading.question import Encoded, LinkedEntity, QuestionReading, Topics, read_question

__all__ = ["Encoded", "LinkedEntity", "QuestionReading", "Topics", "read_question"]
