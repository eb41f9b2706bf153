"""Front ends that build tensor programs: the compute DSL (`compute.py`, TVM te / CINN lang style)."""
