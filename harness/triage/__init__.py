"""Triage of a user's model: run it as a case (``runner``), compare it layer by layer
(``layers``) and reduce it to the smallest model that still fails the same way (``reduce``)."""
