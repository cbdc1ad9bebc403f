//! lectern-bench's integration tests: the seeded random weights every stage benchmark (and the
//! app's workloads) run on, built for the tiny fixture model so the tests stay quick.

mod weights;
