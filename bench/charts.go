package bench

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Charts are drawn with gonum/plot as SVG without embedded fonts (a few
// kilobytes each; viewers substitute a similar font). Every chart has axis
// labels and, when it has several series, a legend.

// chartWidth is the width of every chart.
const chartWidth = 7 * vg.Inch

var (
	defaultBar = color.RGBA{R: 0x4c, G: 0x72, B: 0xb0, A: 0xff} // blue: Hindsight and peers
	markedBar  = color.RGBA{R: 0xdd, G: 0x84, B: 0x52, A: 0xff} // orange: the default of a sweep
)

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Title.TextStyle.Font.Size = vg.Points(13)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(11)
		a.Tick.Label.Font.Size = vg.Points(10)
	}
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	return p
}

// saveSVG writes p to path as SVG (or, for a path ending in .png, as PNG,
// which is handy for looking at a chart where no SVG viewer is at hand).
func saveSVG(p *plot.Plot, h vg.Length, path string) error {
	format := "svg"
	if strings.HasSuffix(path, ".png") {
		format = "png"
	}
	wt, err := p.WriterTo(chartWidth, h, format)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// barItem is one horizontal bar: a value with an optional symmetric error.
type barItem struct {
	Label  string
	Value  float64
	Err    float64 // half-width of the interval drawn as a whisker; 0 = none
	Marked bool    // drawn in the marked colour
}

// horizontalBars draws items top to bottom as horizontal bars with the
// value written at the end of each bar. Horizontal bars keep long system
// names readable.
func horizontalBars(path, title, xLabel string, items []barItem, xMax float64) error {
	p := newPlot(title, xLabel, "")
	n := len(items)
	// plot's y axis grows upwards: put the first item at the top.
	names := make([]string, n)
	for i, it := range items {
		names[n-1-i] = it.Label
	}
	barWidth := vg.Points(14)
	for i, it := range items {
		// One chart per bar, placed by XMin (the category position; y for
		// horizontal bars), so each bar can have its own colour.
		b, err := plotter.NewBarChart(plotter.Values{it.Value}, barWidth)
		if err != nil {
			return err
		}
		b.XMin = float64(n - 1 - i)
		b.Horizontal = true
		b.Color = defaultBar
		if it.Marked {
			b.Color = markedBar
		}
		b.LineStyle.Width = 0
		p.Add(b)
	}
	var whiskers plotter.XErrors
	var whiskerXY plotter.XYs
	labels := plotter.XYLabels{}
	for i, it := range items {
		y := float64(n - 1 - i)
		end := it.Value
		if it.Err > 0 {
			whiskers = append(whiskers, struct{ Low, High float64 }{-it.Err, it.Err})
			whiskerXY = append(whiskerXY, plotter.XY{X: it.Value, Y: y})
			end += it.Err
		}
		labels.XYs = append(labels.XYs, plotter.XY{X: end, Y: y})
		labels.Labels = append(labels.Labels, "  "+strconv.FormatFloat(it.Value, 'f', 3, 64))
	}
	if len(whiskers) > 0 {
		eb, err := plotter.NewXErrorBars(xyErrs{whiskerXY, whiskers})
		if err != nil {
			return err
		}
		eb.LineStyle.Width = vg.Points(1)
		eb.CapWidth = vg.Points(6)
		p.Add(eb)
	}
	lb, err := plotter.NewLabels(labels)
	if err != nil {
		return err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Font.Size = vg.Points(9)
		lb.TextStyle[i].YAlign = -0.5
	}
	p.Add(lb)
	p.NominalY(names...)
	p.X.Min = 0
	p.X.Max = xMax
	var ticks []plot.Tick
	for i := 0; i <= 10; i++ {
		v := xMax * float64(i) / 10
		t := plot.Tick{Value: v}
		if i%2 == 0 {
			t.Label = strconv.FormatFloat(v, 'g', 3, 64)
		}
		ticks = append(ticks, t)
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Add(plotter.NewGrid())
	return saveSVG(p, vg.Points(float64(60+26*n)), path)
}

type xyErrs struct {
	plotter.XYs
	plotter.XErrors
}

// series is one line of a line chart.
type series struct {
	Name   string
	XYs    plotter.XYs
	Color  int // index into plotutil's palette; series of one system share it
	Dashed bool
	Points bool // draw a marker at every point
}

// lineChart draws series with optional log scales, and a legend in a
// column to the right of the plot, where it cannot hide a line. xTicks, when
// not nil, replaces the x axis ticks (e.g. the measured sizes).
func lineChart(path, title, xLabel, yLabel string, ss []series, logX, logY bool, xTicks []plot.Tick) error {
	p := newPlot(title, xLabel, yLabel)
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if xTicks != nil {
		p.X.Tick.Marker = plot.ConstantTicks(xTicks)
	}
	if !logY {
		p.Y.Min = 0 // a linear quantity axis starts at zero, so heights compare
	}
	p.Add(plotter.NewGrid())
	legend := plot.NewLegend()
	legend.TextStyle.Font.Size = vg.Points(10)
	for _, s := range ss {
		if len(s.XYs) == 0 {
			continue
		}
		l, err := plotter.NewLine(s.XYs)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		l.Color = plotutil.Color(s.Color)
		l.Width = vg.Points(1.5)
		if s.Dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l)
		if s.Points {
			sc, err := plotter.NewScatter(s.XYs)
			if err != nil {
				return err
			}
			sc.Color = l.Color
			sc.Shape = draw.CircleGlyph{}
			sc.Radius = vg.Points(2.5)
			p.Add(sc)
		}
		legend.Add(s.Name, l)
	}
	return saveWithLegend(p, legend, 4*vg.Inch, path)
}

// saveWithLegend draws p with legend in a column on its right and writes
// the chart to path (SVG, or PNG for a .png path).
func saveWithLegend(p *plot.Plot, legend plot.Legend, h vg.Length, path string) error {
	w := chartWidth + vg.Inch
	var c vg.CanvasWriterTo
	if strings.HasSuffix(path, ".png") {
		c = vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	} else {
		c = vgsvg.New(w, h)
	}
	dc := draw.New(c)
	lw := legend.Rectangle(dc).Size().X + vg.Points(12)
	p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
	legend.Top, legend.Left = true, true
	legend.YOffs = -vg.Points(24) // below the title's line
	legend.Draw(draw.Crop(dc, w-lw+vg.Points(6), 0, 0, 0))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// cdfPoints bounds the points of one CDF line, so a chart of thousands of
// queries stays a few kilobytes.
const cdfPoints = 200

// cdfSeries is the empirical CDF of lat in milliseconds: with more than
// cdfPoints samples, the CDF at cdfPoints evenly spaced ranks (always
// including the first and the last). Zero durations are clamped to 1µs so
// a log axis can show them.
func cdfSeries(name string, color int, lat []time.Duration) series {
	ms := make([]float64, len(lat))
	for i, d := range lat {
		ms[i] = math.Max(millis(d), 0.001)
	}
	slices.Sort(ms)
	n := len(ms)
	xys := make(plotter.XYs, 0, min(n, cdfPoints)+1)
	if n == 0 {
		return series{Name: name, Color: color}
	}
	xys = append(xys, plotter.XY{X: ms[0], Y: 0})
	step := max(1, float64(n)/cdfPoints)
	for r := step; ; r += step {
		i := min(int(math.Round(r)), n) // rank, 1-based
		xys = append(xys, plotter.XY{X: ms[i-1], Y: float64(i) / float64(n)})
		if i == n {
			break
		}
	}
	return series{Name: name, XYs: xys, Color: color}
}

// meanCI95 returns the mean of xs and the half-width of its 95% confidence
// interval by the normal approximation (1.96 standard errors).
func meanCI95(xs []float64) (mean, half float64) {
	switch len(xs) {
	case 0:
		return 0, 0
	case 1:
		return xs[0], 0
	}
	mean, sd := stat.MeanStdDev(xs, nil) // sample standard deviation (n-1)
	return mean, 1.96 * sd / math.Sqrt(float64(len(xs)))
}
