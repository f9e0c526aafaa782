"""The seam between Podium and a benchmark: small typed interfaces, one per concern
(``evaluator.seam.benchmark`` lists them), and the types they exchange."""

from evaluator.seam.benchmark import Benchmark
from evaluator.seam.grading import Grading
from evaluator.seam.options import Options
from evaluator.seam.pages import Pages, Profile, ShownAnswer
from evaluator.seam.runs import Runs
from evaluator.seam.samples import Samples
from evaluator.seam.scores import Comparison, Metric, Scale, Score, ScoreBlock
from evaluator.seam.scoring import Scoring
from evaluator.seam.splits import Splits

__all__ = [
    "Benchmark",
    "Comparison",
    "Grading",
    "Metric",
    "Options",
    "Pages",
    "Profile",
    "Runs",
    "Samples",
    "Scale",
    "Score",
    "ScoreBlock",
    "Scoring",
    "ShownAnswer",
    "Splits",
]
