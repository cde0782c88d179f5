"""The course built on the notebooks, from one source: student / instructor copies, objectives and the
syllabus from ``notebooks/course.yml``, the chapter quizzes, the book and the instructor guide.

* **One source, two versions.** Solutions sit between ``# BEGIN SOLUTION`` / ``# END SOLUTION``
  (single ``#``: the markers nbgrader and otter both read). :func:`export` writes
  ``dist/instructor/`` (markers removed, solutions kept) and ``dist/student/`` (each solution
  replaced by a stub that assigns ``None`` to the names it defined, or ``pass`` — the checks of
  :mod:`mlpl_lab.course.exercises` then print ✗ and the notebook runs on), outputs stripped;
  :func:`lab_copies` the ones ``make lab`` (students) and ``make lab-instructor`` open, keeping a
  copy changed since it was generated. ``mlpl-lab report`` executes the student copies, ``--instructor``
  the notebooks; a check states its reference answer only under ``MLPL_LAB_ANSWERS=instructor``.
* **course.yml** holds per chapter the objectives, prerequisites, paper, difficulty and the
  measured minutes; :func:`objectives_markdown` is the notebook's second cell (a test compares
  them) and :func:`syllabus_markdown` the syllabus page.
* **Quizzes**: ``notebooks/quizzes/<notebook>.json``, jupyterquiz banks (:func:`validate_quiz`);
  :func:`show_quiz` embeds the bank (base64, decoded by the browser) and jupyterquiz's script in
  one HTML output (no network); the student copies hold the banks encoded, the instructor's plain.
* **The book** (:func:`build_book`): Sphinx + myst-nb + sphinx-book-theme from the notebooks a
  report executed, with execution off, the MathJax the reports ship, a student and an
  instructor variant.

Notebooks are edited as raw JSON (:func:`read_nb` / :func:`write_nb`) so every cell this module
does not touch keeps its bytes.

Modules: :mod:`.notebooks` (JSON, the two versions), :mod:`.syllabus` (course.yml, sync, timings),
:mod:`.quiz`, :mod:`.ranges` (the guide's expected results), :mod:`.gpu_window` (the guide's GPU
section), :mod:`.guide_blocks` (the guide's session plans and compute options), :mod:`.readme_times`
(the README's measured figures), :mod:`.book`, :mod:`.exercises` (the
self-checks, at the chapters' layer). The course sits at the top layer and may import anything
below; its exercises import only what the chapters may. The ``mlpl-lab course`` command is
:mod:`mlpl_lab.commands.course`.
"""
