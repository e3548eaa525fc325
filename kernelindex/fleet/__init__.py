"""The fleet: submitted kernels, the measurement jobs they and our own sweeps put on the queue, and the
workers on GPU (or CPU) machines that take them. The queue is procrastinate's, in the index's own
PostgreSQL (migration 0011); what users follow is ours (``fleet_jobs``)."""
