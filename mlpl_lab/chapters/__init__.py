"""One module per notebook: its design per profile (literals), its runs, tables and claims.

The notebooks import a chapter and narrate; the chapter asks the run store
(:mod:`mlpl_lab.runs.ensure`) for its runs, so a run shared by several notebooks (AN, the
full-label oracle, the zoo's baselines) is trained once per profile for the whole series.
Profile names are branched on here and nowhere below; paper tables live here too.
"""
