"""Schedules: `IRSchedule` with CINN's primitives, legality analysis, trace record/replay, tactics."""
