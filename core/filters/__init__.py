"""Document filters and transforms shared by web sources: cc_net length and lines, language ID,
quality (wiki-reference classifier, perplexity buckets), C4 rules. Pure logic, no Prefect."""
