"""linrnn's implementations: the contract (specs, configs, bundles, initialisation) and the three backends."""
