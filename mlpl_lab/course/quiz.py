"""The chapter quizzes: ``notebooks/quizzes/<notebook>.json`` jupyterquiz banks (:func:`validate_quiz`);
:func:`show_quiz` embeds the bank and jupyterquiz's script in one HTML output (no network).

The answers are never plain text where a student looks: the HTML output carries the bank as
base64 that jupyterquiz's script decodes in the browser (``JSON.parse(window.atob(...))``, the
decoding jupyterquiz applies to a bank it reads from the page), and the student copies of the
banks (:func:`encode_bank`, written by ``mlpl-lab course export``) hold it the same way. The
instructor copies keep them plain. Encoded is not encrypted: it keeps a student from reading an
answer by opening a file, nothing more."""
from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any, Dict, List, Optional

from .notebooks import ENCODED, CourseError, QUIZ_DIR, b64_of, encode_bank  # noqa: F401 (re-exported)

# ---------------------------------------------------------------------------------------
# quizzes
# ---------------------------------------------------------------------------------------
MATHJAX_CDN_LOAD = "script.src = 'https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-svg.js';"
LATEX = re.compile(r"\$|\\\(|\\\[|\\[a-zA-Z]+\{")


def _texts(q: Dict[str, Any]):
    yield q.get("question", "")
    for a in q.get("answers", []):
        yield a.get("answer", "")
        yield a.get("feedback", "")


def validate_quiz(questions: Any, name: str = "quiz") -> List[Dict[str, Any]]:
    """A jupyterquiz bank: 5–8 questions, each ``multiple_choice`` (2+ answers, exactly one
    correct, feedback on every answer) or ``numeric`` (a correct ``value`` or ``range``, a
    ``default`` feedback, feedback on every answer); no LaTeX anywhere (it would need MathJax
    from a CDN in JupyterLab)."""
    if not isinstance(questions, list) or not 5 <= len(questions) <= 8:
        raise CourseError(f"{name}: a bank is a list of 5 to 8 questions")
    for i, q in enumerate(questions, 1):
        where = f"{name}, question {i}"
        if not isinstance(q.get("question"), str) or not q["question"].strip():
            raise CourseError(f"{where}: needs a non-empty `question`")
        answers = q.get("answers")
        if not isinstance(answers, list) or len(answers) < 2:
            raise CourseError(f"{where}: needs at least 2 `answers`")
        if any(not isinstance(a.get("feedback"), str) or not a["feedback"].strip() for a in answers):
            raise CourseError(f"{where}: every answer needs its own `feedback`")
        if q.get("type") == "multiple_choice":
            if any(not isinstance(a.get("answer"), str) for a in answers):
                raise CourseError(f"{where}: every choice needs an `answer` text")
            if sum(a.get("correct") is True for a in answers) != 1:
                raise CourseError(f"{where}: exactly one choice must have \"correct\": true")
        elif q.get("type") == "numeric":
            kinds = [a.get("type") for a in answers]
            if "default" not in kinds:
                raise CourseError(f"{where}: a numeric question needs a `default` answer (its feedback)")
            good = [a for a in answers if a.get("correct") is True and a.get("type") in ("value", "range")]
            if not good:
                raise CourseError(f"{where}: a numeric question needs a correct `value` or `range`")
            for a in answers:
                if a.get("type") == "value" and not isinstance(a.get("value"), (int, float)):
                    raise CourseError(f"{where}: a `value` answer needs a number")
                if a.get("type") == "range" and not (isinstance(a.get("range"), list) and len(a["range"]) == 2
                                                     and a["range"][0] < a["range"][1]):
                    raise CourseError(f"{where}: a `range` answer needs [low, high] with low < high")
        else:
            raise CourseError(f"{where}: type must be 'multiple_choice' or 'numeric'")
        for text in _texts(q):
            if LATEX.search(text or ""):
                raise CourseError(f"{where}: no LaTeX in quiz text (found in {text[:40]!r}); write "
                                  "the formula in plain words or Unicode")
    return questions


def decode_bank(data: Any, name: str = "quiz") -> Any:
    """A bank as :func:`encode_bank` wrote it, or a plain one unchanged."""
    if isinstance(data, dict) and set(data) == {ENCODED}:
        try:
            return json.loads(base64.b64decode(data[ENCODED], validate=True).decode("ascii"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise CourseError(f"{name}: the encoded bank does not decode ({exc}); export it again "
                              "with `mlpl-lab course export`") from None
    return data


def load_quiz(stem: str, directory: Path = QUIZ_DIR) -> List[Dict[str, Any]]:
    """A chapter's bank, plain or encoded (a student copy), validated."""
    path = Path(directory) / f"{stem}.json"
    if not path.exists():
        raise CourseError(f"no quiz bank {path}; add one (see notebooks/quizzes/)")
    return validate_quiz(decode_bank(json.loads(path.read_text(encoding="utf-8")), path.name), path.name)


def quiz_html(stem: str, directory: Path = QUIZ_DIR) -> str:
    """One self-contained HTML snippet: the container, jupyterquiz's styles and script with the
    bank embedded as base64 (decoded by the browser), and a fixed element id (outputs stay the
    same run after run)."""
    from jupyterquiz.dynamic.loader import load_questions_script
    from jupyterquiz.dynamic.renderer import build_script, build_styles, render_div

    questions = load_quiz(stem, directory)
    div_id = "quiz" + re.sub(r"[^A-Za-z0-9]", "", stem)
    prefix, static, url = load_questions_script([], div_id)
    plain = f"var questions{div_id}=[]"
    if not prefix.startswith(plain):
        raise CourseError(f"jupyterquiz's loader changed (its script no longer starts with {plain!r}); "
                          "adapt mlpl_lab.course.quiz.quiz_html to the installed version")
    # the bank as base64 that the browser decodes: the output never holds an answer as text
    prefix = f'var questions{div_id}=JSON.parse(window.atob("{b64_of(questions)}"))' + prefix[len(plain):]
    div = render_div(div_id, False, True, False, 1_000_000, 600, 10, "left") + "</div>"
    colors = {"--jq-multiple-choice-bg": "#345995", "--jq-mc-button-bg": "#fafafa",
              "--jq-mc-button-border": "#e0e0e0e0", "--jq-mc-button-inset-shadow": "#555555",
              "--jq-many-choice-bg": "#e26d5a", "--jq-numeric-bg": "#345995",
              "--jq-numeric-input-bg": "#c0c0c0", "--jq-numeric-input-label": "#101010",
              "--jq-numeric-input-shadow": "#999999", "--jq-string-bg": "#861657",
              "--jq-incorrect-color": "#c80202", "--jq-correct-color": "#009113",
              "--jq-text-color": "#fafafa", "--jq-link-color": "#9abafa"}
    # jupyterquiz loads MathJax 3 from a CDN when it finds a MathJax without `typeset` (JupyterLab 4);
    # the banks hold no LaTeX (validate_quiz), so that load is cut: a quiz never touches the network
    script = build_script(prefix, static, url, div_id, True).replace(
        MATHJAX_CDN_LOAD, "return;  // mlpl_lab: no network (quiz text has no LaTeX)")
    return div + build_styles(div_id, colors) + f'<script type="text/javascript">\n{script}\n</script>'


def show_quiz(stem: str, directory: Optional[Path] = None) -> None:
    """Display a chapter's quiz (the last cell of every notebook). Looks for the bank next to
    the running notebook first (a student copy in ``dist/``), then in ``notebooks/quizzes``."""
    from IPython.display import HTML, display

    local = Path("quizzes")
    directory = Path(directory) if directory else (local if (local / f"{stem}.json").exists() else QUIZ_DIR)
    display(HTML(quiz_html(stem, directory)))


