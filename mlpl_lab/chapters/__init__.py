"""The chapters, one module (or one package) per notebook: its design per profile (literals), its
runs, tables and claims -- and nothing else: the machinery every chapter shares (what a chapter
asks, tuning, the plan, the registry, the recipes of the catalogue's rows) is the protocol's
(:mod:`mlpl_lab.protocol`), and no chapter imports another.

The notebooks import a chapter and narrate; the chapter asks the run store
(:mod:`mlpl_lab.runs.ensure`) for its runs, so a run shared by several notebooks (AN, the
full-label oracle, the zoo's baselines) is trained once per profile for the whole series.
Profile names are branched on here and in the protocol, nowhere below; paper tables live here.
"""
