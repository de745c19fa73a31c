package history

// RegisterMetricsReadingEvery is RegisterMetrics with a read every so often (0: at every scrape), for tests
// that see a read fail after one succeeded.
var RegisterMetricsReadingEvery = registerMetrics
