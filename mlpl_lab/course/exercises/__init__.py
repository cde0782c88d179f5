"""Self-checked exercises for the notebooks.

Every notebook 00–08 ends with 3–5 exercises under ``### Exercise N — …``. Their checks live
here (:mod:`.checks`), print ``✓`` or ``✗`` with a hint that does not give the answer away,
return a bool and never raise (:mod:`.core`), so a student copy whose solutions are stubs runs
end to end and the notebook continues with the library's reference. Solutions sit between
``# BEGIN SOLUTION`` / ``# END SOLUTION`` in the one source; ``make student`` strips them
(:mod:`mlpl_lab.course.notebooks`). A check states the reference answer only for instructors
(``$MLPL_LAB_ANSWERS=instructor``: :func:`mlpl_lab.protocol.grading.shows_answers`).
"""
from .checks import *  # noqa: F401,F403
from .checks import CHECKS, holding_claims, paired_t_reference  # noqa: F401
from .core import ANSWERS_ENV, FAIL, INSTRUCTOR, PASS, shows_answers  # noqa: F401
