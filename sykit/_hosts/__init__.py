"""Hosts turn one attempt into one raw reply; everything above (retries, fallback, records) is shared."""
