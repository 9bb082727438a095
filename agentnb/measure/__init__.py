"""The measure layer: sweeps, experiments, cost and latency tables, money, plots, reproduce.

Its face: ``from agentnb.measure import sweep`` gives the function (no module here is named
like a function it exports). Plots stay in `agentnb.measure.plot`, loaded on first use.
"""

from . import scenarios
from .caching import cache_estimate
from .critical import critical_path
from .experiments.runs import experiment
from .experiments.stored import Experiment, compare, open_experiment
from .frontier import pareto
from .prices import Price, Prices, add_cost
from .rounds import verifier_table
from .sections import section_costs
from .sweeps import sweep
from .tables import breakdown, breakdown_growth, cost_fit, cost_table, latency_series

__all__ = [
    # many runs
    "sweep",
    "experiment",
    "open_experiment",
    "Experiment",
    "compare",
    "pareto",
    # tables of cost and latency
    "cost_table",
    "breakdown",
    "breakdown_growth",
    "cost_fit",
    "section_costs",
    "latency_series",
    "critical_path",
    "verifier_table",
    # money and caching
    "Price",
    "Prices",
    "add_cost",
    "cache_estimate",
    # the article's scenarios
    "scenarios",
]
