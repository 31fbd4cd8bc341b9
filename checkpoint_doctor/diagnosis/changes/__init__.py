"""The changed query: what a job (``--job MODULE:FUNCTION``) would run, as Spark sees it
(:mod:`.facts`), compared with what the checkpoint holds (:mod:`.compare`). Pure."""
