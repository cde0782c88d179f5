"""The protocol: the floor every chapter stands on, between the analysis and the chapters.

What a chapter asks for and how it is decided (:mod:`.asked`), the equal-budget tuning stage
(:mod:`.tuning`), the plan across the notebooks (:mod:`.plan`), what a version bump re-keys
(:mod:`.rekey`), the chapters' registry (:mod:`.registry`), the pending families as sittings
(:mod:`.families`), the live exercises (:mod:`.live`) and the helpers every chapter shares
(:mod:`.common`). It may import everything below it (runs, analysis, viz) and nothing above:
a chapter imports the protocol, never the other way round, and never another chapter.
"""
