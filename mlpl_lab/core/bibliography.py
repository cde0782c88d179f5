"""The works the lab cites: one entry each (title, authors, venue, year, arXiv id).

This is the only source of paper names and venues: the README's table of the papers
(:func:`papers_markdown`, written by ``mlpl-lab course sync``), each chapter's **Paper:** line
(``notebooks/course.yml`` names an entry's key), the paper column of the chapters' claims tables
(:func:`cite`) — and a test (``tests/test_bibliography.py``) checks that every mention of a
venue or year in the notebooks, the README and the book's pages agrees with the entry it names.

The five papers the lab reproduces are :data:`PAPERS` (in the README's order); the rest are the
other works the chapters cite (baselines and the protocols the papers follow). Venues and years
are those of the published versions; a work known to the lab only as a preprint has venue
``"arXiv"`` and its identifier. This module imports nothing from the rest of the package.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

__all__ = ["Work", "WORKS", "PAPERS", "work", "cite", "reference", "papers_markdown", "aliases"]


@dataclass(frozen=True)
class Work:
    key: str
    #: how the lab names the work in prose and tables ("GR Loss", "Cole et al.")
    short: str
    #: the authors as the lab writes them: family names, "et al." beyond four
    authors: str
    title: str
    #: the venue's short name ("CVPR", "NeurIPS", "arXiv")
    venue: str
    year: int
    arxiv: Optional[str] = None
    #: other names prose uses for it (a test resolves a venue or year mentioned next to one of
    #: them to this entry); the method labels that cite a work are the method catalogue's
    #: (:func:`mlpl_lab.catalogue.citation_aliases`)
    also: Tuple[str, ...] = field(default_factory=tuple)

    @property
    def venue_year(self) -> str:
        """"IJCAI 2024"; "arXiv 2302.14695" for a preprint."""
        if self.venue == "arXiv":
            return f"arXiv {self.arxiv}"
        return f"{self.venue} {self.year}"


WORKS: Dict[str, Work] = {w.key: w for w in (
    # the five papers the lab reproduces
    Work("cls", "CLS", "Lyu, Sun, Deng, Feng",
         "Addressing Multi-Label Learning with Partial Labels: From Sample Selection to Label Selection",
         "AAAI", 2025, also=("Co-Label Selection", "Lyu et al.")),
    Work("opml", "OPML", "Li, Wang, Chen",
         "Pushing One Pair of Labels Apart Each Time in Multi-Label Learning: From Single Positive to Full Labels",
         "arXiv", 2023, arxiv="2302.14695", also=("Li et al.",)),
    Work("lac", "LAC", "Xie, Xiao, Huang",
         "Label-Aware Global Consistency for Multi-Label Learning with Single Positive Labels",
         "NeurIPS", 2022, also=("LAGC", "Xie et al.")),
    Work("gr", "GR Loss", "Chen et al.",
         "Boosting Single Positive Multi-label Classification with Generalized Robust Loss",
         "IJCAI", 2024, also=("Chen et al.",)),
    Work("pu_mlc", "PU-MLC", "Yuan, Zhang, Huang",
         "Positive Label Is All You Need for Multi-Label Classification",
         "ICME", 2024, arxiv="2306.16016", also=("Yuan et al.",)),
    # the other works the chapters cite
    Work("cole", "Cole et al.", "Cole, Mac Aodha, Lorieul, Perona, Morris, Jojic",
         "Multi-Label Learning from Single Positive Labels", "CVPR", 2021, ),
    Work("large_loss", "Large Loss Matters", "Kim, Kim, Akata, Lee",
         "Large Loss Matters in Weakly Supervised Multi-Label Classification", "CVPR", 2022,
         also=("Kim et al.",)),
    Work("boostlu", "BoostLU", "Kim et al.",
         "Bridging the Gap between Model Explanations in Partially Annotated Multi-label Classification",
         "CVPR", 2023, arxiv="2304.01804"),
    Work("em_apl", "EM / APL", "Zhou, Chen, Wang, Chen, Heng",
         "Acknowledging the Unknown for Multi-Label Learning with Single Positive Labels", "ECCV", 2022,
         also=("Zhou et al.",)),
    Work("hill", "Hill / SPLC", "Zhang, Cheng, Huang, Wen, Feng, Li, Guo",
         "Simple and Robust Loss Design for Multi-Label Learning with Missing Labels", "arXiv", 2021,
         arxiv="2112.07368", also=("Zhang et al.",)),
    Work("coteaching", "Co-teaching", "Han et al.",
         "Co-teaching: Robust Training of Deep Neural Networks with Extremely Noisy Labels",
         "NeurIPS", 2018, also=("Han et al.",)),
    Work("jocor", "JoCoR", "Wei, Feng, Chen, An",
         "Combating Noisy Labels by Agreement: A Joint Training Method with Co-Regularization",
         "CVPR", 2020, also=("Wei et al.",)),
    Work("durand", "Durand et al.", "Durand, Mehrasa, Mori",
         "Learning a Deep ConvNet for Multi-label Classification with Partial Labels", "CVPR", 2019),
    Work("coteaching_plus", "Co-teaching+", "Yu, Han, Yao, Niu, Tsang, Sugiyama",
         "How Does Disagreement Help Generalization against Label Corruption?", "ICML", 2019,
         also=("Yu et al.",)),
    Work("ml_gcn", "ML-GCN", "Chen, Wei, Wang, Guo",
         "Multi-Label Image Recognition with Graph Convolutional Networks", "CVPR", 2019,
         also=("Chen et al.",)),
    Work("sst", "SST", "Chen, Pu, Wu, Xie, Lin",
         "Structured Semantic Transfer for Multi-Label Recognition with Partial Labels", "AAAI", 2022,
         also=("Chen et al.", "HCP-MLR-PL")),
    Work("sarb", "SARB", "Pu, Chen, Wu, Lin",
         "Semantic-Aware Representation Blending for Multi-Label Image Recognition with Partial Labels",
         "AAAI", 2022, also=("Pu et al.",)),
    Work("vpu", "vPU", "Chen, Liu, Wang, et al.",
         "A Variational Approach for Learning from Positive and Unlabeled Data", "NeurIPS", 2020,
         also=("Chen et al.",)),
    Work("focal", "Focal loss", "Lin, Goyal, Girshick, He, Dollár", "Focal Loss for Dense Object Detection",
         "ICCV", 2017, also=("Lin et al.",)),
    Work("asl", "ASL", "Ridnik et al.", "Asymmetric Loss for Multi-Label Classification", "ICCV", 2021,
         also=("Ridnik et al.", "Asymmetric loss")),
    Work("label_bias", "Arroyo et al.", "Arroyo et al.",
         "Understanding Label Bias in Single Positive Multi-Label Learning", "ICLR", 2023),
    Work("bbe", "BBE", "Garg, Wu, Smola, Balakrishnan, Lipton",
         "Mixture Proportion Estimation and PU Learning: A Modern Approach", "NeurIPS", 2021,
         also=("Garg et al.", "Best Bin Estimation")),
    Work("crisp", "Crisp", "Liu, Xu, Wang, Geng",
         "Can Class-Priors Help Single-Positive Multi-Label Learning?", "NeurIPS", 2025, arxiv="2309.13886",
         also=("CRISP",)),
    Work("cardinality", "Gharib et al.", "Gharib, Murena, Klami",
         "Single-positive Multi-label Learning with Label Cardinality", "TMLR", 2025),
    Work("lamc", "LAMC", "Hagos, Lundström", "Least-Ambiguous Multi-Label Classifier", "arXiv", 2025,
         arxiv="2509.10689"),
)}

#: the five papers the lab reproduces, in the README's order
PAPERS: Tuple[str, ...] = ("cls", "opml", "lac", "gr", "pu_mlc")


def work(key: str) -> Work:
    """The entry ``key``; an unknown key is an error naming the known ones."""
    if key not in WORKS:
        raise KeyError(f"no work {key!r} in the bibliography (mlpl_lab/core/bibliography.py); "
                       f"known: {', '.join(sorted(WORKS))}")
    return WORKS[key]


def cite(key: str) -> str:
    """The short citation prose and tables use: "GR Loss (IJCAI 2024)", "OPML (arXiv 2302.14695)"."""
    w = work(key)
    return f"{w.short} ({w.venue_year})"


def reference(key: str) -> str:
    """The full reference of a chapter's **Paper:** line: "Chen et al., Boosting ... (IJCAI 2024)"."""
    w = work(key)
    return f"{w.authors}, {w.title} ({w.venue_year})"


def papers_markdown() -> str:
    """The README's table of the five papers (short name, authors, title, venue)."""
    lines = ["| short name | paper |", "|---|---|"]
    for key in PAPERS:
        w = WORKS[key]
        lines.append(f"| {w.short} | {w.authors} — *{w.title}* ({w.venue_year}) |")
    return "\n".join(lines)


def aliases() -> Dict[str, Tuple[str, ...]]:
    """``{name: keys}``: every name prose may use for a work (short name, other names, title),
    with the entries it may mean ("Chen et al." is more than one group of authors)."""
    out: Dict[str, Tuple[str, ...]] = {}
    for w in WORKS.values():
        for name in (w.short, w.title, *w.also):
            out[name] = out.get(name, ()) + (w.key,)
    return out
