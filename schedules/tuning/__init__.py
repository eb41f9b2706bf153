"""Search-based tuning of the x86 auto schedule: the search space of a group (`space`), loop-nest
features (`features`), the learned cost model (`cost_model`) and the evolutionary search
(`search`). Measuring candidates needs the pipeline: `cinn_py.tools.tune` drives these."""
