"""Runtime support shared by backends: argument validation (`args`), compile caches (`cache`),
and the CPU thread pool that runs parallel loops (`threadpool`)."""
