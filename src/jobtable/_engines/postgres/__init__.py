"""The PostgreSQL engine: many runner processes on many machines share one queue."""
