"""Rendering: what an operator reads. Text tables and reports (:mod:`~checkpoint_doctor.render.text`),
the JSON document envelope every ``--format json`` output shares (:mod:`~checkpoint_doctor.render.documents`;
the JSON Schemas are in ``checkpoint_doctor/schemas/``), and the follow-up commands printed as hints,
carrying the flags that shaped the answer (:mod:`~checkpoint_doctor.render.hints`). Pure.
"""
