package importer

import "strings"

// price is USD per million tokens.
type price struct {
	model                                string
	input, output, cacheWrite, cacheRead float64
}

// claudePrices is claude-code-sync 0.1.15's price table, in its order (the
// order decides partial matches). Importing with the plugin's numbers means a
// session imported after live sync keeps the cost the plugin reported.
var claudePrices = []price{
	{"claude-sonnet-4-20250514", 3.00, 15.00, 3.75, 0.30},
	{"claude-opus-4-20250514", 15.00, 75.00, 18.75, 1.50},
	{"claude-opus-4-5-20251101", 15.00, 75.00, 18.75, 1.50},
	{"claude-3-5-sonnet-20241022", 3.00, 15.00, 3.75, 0.30},
	{"claude-3-opus-20240229", 15.00, 75.00, 18.75, 1.50},
	{"claude-3-5-haiku-20241022", 0.80, 4.00, 1.00, 0.08},
}

// usage is a transcript's summed token counts.
type usage struct {
	input, cacheCreation, cacheRead, output int64
}

// claudeCost computes what claude-code-sync reports as a session's cost: an
// exact model match, else the first table entry that contains the model or is
// contained in it, else 0. The arithmetic follows the plugin's order so the
// floating-point result is identical.
func claudeCost(model string, u usage) float64 {
	if model == "" {
		return 0
	}
	var p *price
	for i := range claudePrices {
		if claudePrices[i].model == model {
			p = &claudePrices[i]
			break
		}
	}
	if p == nil {
		for i := range claudePrices {
			k := claudePrices[i].model
			if strings.Contains(model, k) || strings.Contains(k, model) {
				p = &claudePrices[i]
				break
			}
		}
	}
	if p == nil {
		return 0
	}
	inputCost := float64(u.input) * p.input
	cacheWriteCost := float64(u.cacheCreation) * p.cacheWrite
	cacheReadCost := float64(u.cacheRead) * p.cacheRead
	outputCost := float64(u.output) * p.output
	return (inputCost + cacheWriteCost + cacheReadCost + outputCost) / 1_000_000
}
