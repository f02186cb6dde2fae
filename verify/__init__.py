"""The verification engines and benchmarks: the cross-check of the three implementations, `linrnn conform`
and its adapters, and the timing harnesses (docs/architecture.md). They sit above `impls` (the contract
and the implementations) and below everything that runs them."""
