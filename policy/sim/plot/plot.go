package plot

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"

	gonum "gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/waitroom/waitroom/policy/sim"
)

// The plots of one run.
const (
	Active     = "active"     // active visitors (the truth) against total_active_users
	Queue      = "queue"      // visitors waiting
	Admissions = "admissions" // admissions per minute against new_users_per_minute
	Heatmap    = "heatmap"    // wait against arrival minute
)

// Names lists the plots written for every run.
var Names = []string{Active, Queue, Admissions, Heatmap}

// File is the file name of one plot of one run.
func File(scenario, strategy, plot string) string {
	return fmt.Sprintf("%s-%s-%s.png", scenario, strategy, plot)
}

var (
	colTrue  = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	colView  = color.RGBA{R: 255, G: 127, B: 14, A: 255}
	colLimit = color.RGBA{R: 214, G: 39, B: 40, A: 255}
	colCrash = color.RGBA{R: 120, G: 120, B: 120, A: 255}
)

// lineStyle is how a series is drawn: the truth solid, a node's view of it
// dashed in another colour.
type lineStyle struct {
	color  color.Color
	dashes []vg.Length
}

var (
	truthLine = lineStyle{color: colTrue}
	viewLine  = lineStyle{color: colView, dashes: []vg.Length{vg.Points(3), vg.Points(2)}}
)

// Write writes every run's PNG plots into dir (created if needed) and
// returns their paths.
func Write(r *sim.Report, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, res := range r.Runs {
		for _, name := range Names {
			p, err := Draw(res, name)
			if err != nil {
				return files, err
			}
			w, h := 8*vg.Inch, 4*vg.Inch
			if name == Heatmap {
				w, h = 6*vg.Inch, 5*vg.Inch
			}
			path := filepath.Join(dir, File(res.Scenario, res.Strategy, name))
			if err := p.Save(w, h, path); err != nil {
				return files, err
			}
			files = append(files, path)
		}
	}
	return files, nil
}

// Draw draws one of a run's plots (see Names).
func Draw(res *sim.Result, name string) (*gonum.Plot, error) {
	p := gonum.New()
	pts := res.EverySecond()
	title := fmt.Sprintf("%s — %s", res.Scenario, res.Strategy)
	p.Legend.Top = true
	p.Legend.Left = false
	switch name {
	case Active, Queue:
		lp := linePlots[name]
		p.Title.Text = title + lp.title
		p.X.Label.Text = "minutes"
		p.Y.Label.Text = lp.yLabel
		if err := addLines(p, pts, lp.lines); err != nil {
			return nil, err
		}
		if lp.limit {
			addHLine(p, "total_active_users", float64(res.Limits.TotalActiveUsers), pts)
		}
		addCrashes(p, res)
		p.Y.Min = 0
	case Admissions:
		p.Title.Text = title + ": admissions per minute"
		p.X.Label.Text = "minute"
		p.Y.Label.Text = "new users admitted"
		vals := make(plotter.Values, len(res.Minutes))
		for i, m := range res.Minutes {
			vals[i] = float64(m.Admitted)
		}
		bars, err := plotter.NewBarChart(vals, vg.Points(6))
		if err != nil {
			return nil, err
		}
		bars.Color = colTrue
		bars.LineStyle.Width = 0
		p.Add(bars)
		p.Legend.Add("admitted", bars)
		lim := plotter.XYs{{X: -1, Y: float64(res.Limits.NewUsersPerMinute)}, {X: float64(len(res.Minutes)), Y: float64(res.Limits.NewUsersPerMinute)}}
		l, err := plotter.NewLine(lim)
		if err != nil {
			return nil, err
		}
		l.Color = colLimit
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(l)
		p.Legend.Add("new_users_per_minute", l)
		p.Y.Min = 0
	case Heatmap:
		p.Title.Text = title + ": wait vs arrival minute"
		p.X.Label.Text = "arrival minute"
		p.Y.Label.Text = "wait (minutes)"
		pal := moreland.BlackBody()
		h := plotter.NewHeatMap(heatGrid{res.Heatmap}, pal.Palette(64))
		p.Add(h)
		p.X.Min, p.X.Max = 0, res.Heatmap.XMax
		p.Y.Min, p.Y.Max = 0, res.Heatmap.YMax/60
		p.X.Padding, p.Y.Padding = 0, 0
		p.Legend = gonum.NewLegend()
		p.Legend.Top = true
		p.Legend.Add(fmt.Sprintf("r = %.2f, %d visitors", res.Figures.WaitCorrelation, res.Counts.Admissions))
		p.Legend.TextStyle.Color = color.White
	default:
		return nil, fmt.Errorf("plot %q: must be one of %v", name, Names)
	}
	return p, nil
}

// series is one line of a plot over the run's points: the truth, or a
// node's view of it.
type series struct {
	label string
	style lineStyle
	y     func(sim.Point) float64
}

// linePlots are the plots that draw the truth and node 0's view of it
// over the run: their titles, the y axis, their lines, and whether the
// active limit is drawn.
var linePlots = map[string]struct {
	title, yLabel string
	lines         []series
	limit         bool
}{
	Active: {": active users vs limit", "active users (sessions the origin honours)", []series{
		{"actual (the truth)", truthLine, func(q sim.Point) float64 { return float64(q.Active) }},
		{"as node 0 saw it", viewLine, func(q sim.Point) float64 { return q.ViewActive }},
	}, true},
	Queue: {": queue length", "visitors waiting", []series{
		{"actual (still checking in)", truthLine, func(q sim.Point) float64 { return float64(q.Waiting) }},
		{"counted, as node 0 saw it", viewLine, func(q sim.Point) float64 { return float64(q.ViewWaiting) }},
	}, false},
}

// addLines draws every series over the points.
func addLines(p *gonum.Plot, pts []sim.Point, lines []series) error {
	for _, l := range lines {
		if err := addLine(p, l.label, l.style, pts, l.y); err != nil {
			return err
		}
	}
	return nil
}

// addLine draws y over the points, labelled in the legend.
func addLine(p *gonum.Plot, label string, style lineStyle, pts []sim.Point, y func(sim.Point) float64) error {
	xy := make(plotter.XYs, len(pts))
	for i, q := range pts {
		xy[i] = plotter.XY{X: q.T / 60, Y: y(q)}
	}
	if len(xy) == 0 {
		xy = plotter.XYs{{}}
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	l.Color = style.color
	l.Width = vg.Points(1.2)
	l.Dashes = style.dashes
	p.Add(l)
	p.Legend.Add(label, l)
	return nil
}

func addHLine(p *gonum.Plot, label string, y float64, pts []sim.Point) {
	end := 1.0
	if len(pts) > 0 {
		end = pts[len(pts)-1].T / 60
	}
	l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: y}, {X: end, Y: y}})
	if err != nil {
		return
	}
	l.Color = colLimit
	l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	p.Add(l)
	p.Legend.Add(label, l)
}

// addCrashes marks node crashes, clean leaves and restarts, and the start and heal
// of partitions, with vertical lines.
func addCrashes(p *gonum.Plot, res *sim.Result) {
	top := float64(res.Limits.TotalActiveUsers) * 1.1
	marks := func(label string, ts []float64, dashes []vg.Length) {
		for i, t := range ts {
			l, err := plotter.NewLine(plotter.XYs{{X: t / 60, Y: 0}, {X: t / 60, Y: top}})
			if err != nil {
				return
			}
			l.Color = colCrash
			l.Dashes = dashes
			p.Add(l)
			if i == 0 {
				p.Legend.Add(label, l)
			}
		}
	}
	marks("node crash", res.Crashes, []vg.Length{vg.Points(2), vg.Points(2)})
	marks("node leave", res.Leaves, []vg.Length{vg.Points(1), vg.Points(3)})
	marks("node restart", res.Restarts, []vg.Length{vg.Points(4), vg.Points(4)})
	var cuts, heals []float64
	for _, pt := range res.Partitions {
		cuts = append(cuts, pt.From)
		heals = append(heals, pt.To)
	}
	marks("partition", cuts, []vg.Length{vg.Points(6), vg.Points(2)})
	marks("heal", heals, []vg.Length{vg.Points(6), vg.Points(2), vg.Points(1), vg.Points(2)})
}

// heatGrid adapts a Heatmap to plotter.GridXYZ, waits in minutes.
type heatGrid struct{ h sim.Heatmap }

func (g heatGrid) Dims() (c, r int) { return g.h.XBins, g.h.YBins }
func (g heatGrid) Z(c, r int) float64 {
	return float64(g.h.Counts[c][r])
}
func (g heatGrid) X(c int) float64 { return (float64(c) + 0.5) * g.h.XMax / float64(g.h.XBins) }
func (g heatGrid) Y(r int) float64 {
	return (float64(r) + 0.5) * g.h.YMax / 60 / float64(g.h.YBins)
}
