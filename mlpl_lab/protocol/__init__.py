"""The protocol: the floor every chapter stands on, between the analysis and the chapters.

What lives here (it may import runs, analysis and viz, never a chapter; a chapter imports the
protocol and never another chapter):

* **what a chapter asks** (:mod:`.asked`: ``Asked``, ``ensure_asked``, the pending families), the
  plan across the notebooks (:mod:`.plan`), what a version bump re-keys (:mod:`.rekey`), pending
  families as sittings (:mod:`.families`), the chapters' registry (:mod:`.registry`), the live
  exercises and their grading (:mod:`.live`, :mod:`.live_check`, :mod:`.grading`), the helpers
  every chapter shares (:mod:`.common`), k for EPR/ROLE (:mod:`.positives`), the scene candidates
  (:mod:`.scenes_choice`);
* **the rules runs follow**: the equal-budget tuning stage (:mod:`.tuning`), the length-check rule
  (:mod:`.lengths`, :mod:`.bound_length`), the regime table (:mod:`.regimes`);
* **one recipe per catalogue row** (:mod:`.recipes`, with LAC's two stages in
  :mod:`.lac_stages`): how the row becomes run specs under each regime, its length and its
  control -- what 07 reads, and what a chapter showing the same method shares;
* a researcher's own row of 07 (:mod:`.user_row`, ``mlpl-lab benchmark --add``).

**The one shape of a chapter's design** (:mod:`.design`). A chapter that trains declares
``PARAMETERS`` (the notebook's parameters that change its runs), ``design(profile, **parameters)``
and ``specs(design, stored) -> Asked``, and ends with ``CHAPTER = Chapter(...)``. Its design is a
frozen dataclass whose ``profile`` is the :class:`~mlpl_lab.profiles.Profile` itself; its literals
come from one per-profile table read by :func:`.design.preset` -- the profile's row, else the row
of the profile whose designs it takes (``gpu_shape`` takes gpu's), else cpu's: the one rule for a
profile the table does not name; its seeds are read off the profile in ``design`` and nowhere else
(the first ``n``, or the selection seed and the fresh seeds after it); its ``families`` property
declares the chapter's questions before any run is read. :func:`.design.shape_problems` checks it.

**Adding a method** (a loss trained as one network): register the loss
(:func:`mlpl_lab.losses.registry.register_loss`) with a numerics version
(:data:`mlpl_lab.core.numerics.VERSIONS`), then one catalogue entry
(:func:`mlpl_lab.catalogue.register`, or a line of ``ENTRIES``) and, only where the row is not
its method with its fixed hyperparameters at the profile's scale, one recipe line
(:func:`.recipes.register_recipe`, or a line of :data:`.recipes.RECIPES`). 07 then plans it:
tuned on its grid with the equal budget, on every regime it applies to.

**Adding a chapter**: a module with the shape above -- in ``mlpl_lab/chapters/`` (found there),
or anywhere else and registered with :func:`.registry.register_chapter` -- and a notebook with one
``parameters`` cell; ``notebooks/course.yml`` lists the course's own. The plan, the serving of
packs and the live exercises then find it like the others.
"""
