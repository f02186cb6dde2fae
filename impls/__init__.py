"""linrnn's implementations: bundle, configs, initialisation, tolerance table, and the three backends."""
