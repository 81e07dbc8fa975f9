"""Ablation grids: run a table of metric compositions over data with human judgments.

``load_grid`` reads a grid (TOML, see ``docs/ablation.md``), ``run_grid`` scores every cell
(each unique sentence encoded once per model), ``evaluate`` correlates the cells with the human
scores (Williams test, bootstrap intervals) and ``write_outputs`` writes the table, CSV, chart
and signatures.
"""

from .grid import GridEntry, Grid, load_grid, parse_grid
from .report import CellStat, evaluate, markdown, write_outputs
from .runner import CellPlan, CellRun, GridPlan, GridRun, plan_grid, run_grid

__all__ = ["CellPlan", "CellRun", "CellStat", "GridEntry", "Grid", "GridPlan", "GridRun", "evaluate", "load_grid",
           "markdown", "parse_grid", "plan_grid", "run_grid", "write_outputs"]
