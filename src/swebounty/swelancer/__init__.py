"""SWE-Lancer's task files (openai/SWELancer-Benchmark) read as they are published.

Two CSV layouts: `swelancer_tasks*.csv` (`question_id, variant, price, price_limit, prompt,
manager_data, manager_commit, acceptable_folders, cwd`) and the newer `all_swelancer_tasks.csv`
(no `prompt`; `set, title, description, proposals` besides). A `swe_manager` row is a pick task
(`manager.py`); an `ic_swe` row is an end-to-end fix task built from its `issues/<folder>/`
beside the CSV (`ic.py`). Every task keeps the row's price as `value_usd` (`value_source =
"swelancer"`), its variant, and SWE-Lancer's split: the `set` column, else the file's name
(`swelancer_tasks_lite.csv` is "lite"). `format.py` is the `formats.DatasetFormat` plug-in.
"""

from swebounty.swelancer.format import FORMAT, SWELancerFormat

__all__ = ["FORMAT", "SWELancerFormat"]
