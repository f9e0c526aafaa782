"""The seam between Podium and a benchmark: small typed interfaces, one per concern
(``evaluator.seam.benchmark`` lists them), and the types they exchange."""

from typing import Any, TypeAlias

from evaluator.seam.benchmark import Benchmark
from evaluator.seam.grading import Grading
from evaluator.seam.options import Options
from evaluator.seam.pages import Pages, Profile, ShownAnswer
from evaluator.seam.runs import Runs
from evaluator.seam.samples import Samples
from evaluator.seam.scores import Comparison, Metric, Scale, Score, ScoreBlock
from evaluator.seam.scoring import Scoring
from evaluator.seam.splits import Splits

# A benchmark chosen by name at run time (``evaluator.benchmarks.get_benchmark``), as the server
# and the command lines hold it: its split, record and prediction types are its own and unknown
# to the caller, which only hands back what the benchmark gave it. Python's types cannot say
# "some types" (an existential type), so these aliases are the one place that says ``Any`` for
# them.
SomeBenchmark: TypeAlias = Benchmark[Any, Any, Any]
SomeGrading: TypeAlias = Grading[Any, Any, Any]
SomePages: TypeAlias = Pages[Any, Any]
SomeSplits: TypeAlias = Splits[Any]

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
    "SomeBenchmark",
    "SomeGrading",
    "SomePages",
    "SomeSplits",
    "Splits",
]
