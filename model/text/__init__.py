"""Text around the translator: sentences (``segment``), the stand-ins that carry placeholders,
glossary terms and the spans that must not change through a translation (``stand_ins``,
``placeholders``, ``glossary``, ``spans``), the one pipeline every translating path runs
(``pipeline``), language identification (``language_id``) and ``rendition translate`` (``cli``)."""
