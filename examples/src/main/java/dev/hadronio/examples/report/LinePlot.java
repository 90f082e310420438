package dev.hadronio.examples.report;

import javax.imageio.ImageIO;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.FontMetrics;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.Stroke;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;

/**
 * Line charts over message size drawn with Java2D (headless) into a PNG: a grid of panels, log2 x axis (bytes),
 * a linear (from zero) or logarithmic y axis, a legend under each panel. No browser, no extra library.
 */
public final class LinePlot {

    static {
        System.setProperty("java.awt.headless", "true");
    }

    private static final int PANEL_WIDTH = 640;
    private static final int PLOT_HEIGHT = 340;
    private static final int MARGIN_LEFT = 70;
    private static final int MARGIN_RIGHT = 36;
    private static final int MARGIN_TOP = 40;
    private static final int AXIS_SPACE = 40;
    private static final int LEGEND_LINE = 18;
    private static final int TITLE_SPACE = 36;
    private static final Color[] PALETTE = {
        new Color(0x1f77b4), new Color(0xd62728), new Color(0x2ca02c), new Color(0xff7f0e),
        new Color(0x9467bd), new Color(0x8c564b), new Color(0xe377c2), new Color(0x17becf),
    };

    /** One line: points (x = size in bytes, y in the panel's unit), a palette colour and a dash flag. */
    public static final class Series {
        final String name;
        final double[] x;
        final double[] y;
        final int color;
        final boolean dashed;

        public Series(String name, double[] x, double[] y, int color, boolean dashed) {
            if (x.length != y.length) {
                throw new IllegalArgumentException("series '" + name + "' has " + x.length + " x and " + y.length
                        + " y values");
            }
            this.name = name;
            this.x = x.clone();
            this.y = y.clone();
            this.color = color;
            this.dashed = dashed;
        }
    }

    /** One chart; {@code logY} for values that span decades (latencies). */
    public static final class Panel {
        final String title;
        final String yLabel;
        final List<Series> series;
        final boolean logY;

        public Panel(String title, String yLabel, List<Series> series, boolean logY) {
            this.title = title;
            this.yLabel = yLabel;
            this.series = Collections.unmodifiableList(new ArrayList<>(series));
            this.logY = logY;
        }
    }

    /** Maps values to pixel rows, linear from zero or logarithmic between decades. */
    private static final class YAxis {
        final boolean log;
        final double low;
        final double high;
        final int top;
        final int bottom;

        YAxis(boolean log, double min, double max, int top, int bottom) {
            this.log = log;
            this.top = top;
            this.bottom = bottom;
            if (log) {
                double lo = min > 0 && Double.isFinite(min) ? min : 1;
                double hi = max > lo ? max : lo * 10;
                low = Math.pow(10, Math.floor(Math.log10(lo)));
                high = Math.pow(10, Math.ceil(Math.log10(hi)));
            } else {
                double step = niceStep(max > 0 ? max : 1);
                low = 0;
                high = Math.ceil((max > 0 ? max * 1.05 : 1) / step) * step;
            }
        }

        int pixel(double v) {
            double f = log ? (Math.log10(v) - Math.log10(low)) / (Math.log10(high) - Math.log10(low))
                    : (v - low) / (high - low);
            return (int) Math.round(bottom - f * (bottom - top));
        }

        /** Tick values: 1-2-5 steps per decade (log) or about five nice steps (linear). */
        List<Double> ticks() {
            List<Double> ticks = new ArrayList<>();
            if (log) {
                for (double decade = low; decade < high * 1.001; decade *= 10) {
                    for (double m : new double[] {1, 2, 5}) {
                        if (decade * m <= high * 1.001) {
                            ticks.add(decade * m);
                        }
                    }
                }
            } else {
                double step = niceStep(high / 1.05);
                for (double y = 0; y <= high + step / 2; y += step) {
                    ticks.add(y);
                }
            }
            return ticks;
        }

        String label(double v) {
            if (log) {
                return v >= 1 ? String.format(Locale.ROOT, "%.0f", v) : String.format(Locale.ROOT, "%.2g", v);
            }
            double step = niceStep(high / 1.05);
            return formatTick(v, step);
        }
    }

    private LinePlot() {
    }

    /** Draws the panels (two per row) under a title and writes a PNG. */
    public static void writePng(Path file, String title, List<Panel> panels) throws IOException {
        if (panels.isEmpty()) {
            throw new IllegalArgumentException("nothing to plot");
        }
        int columns = Math.min(2, panels.size());
        int rows = (panels.size() + columns - 1) / columns;
        int maxSeries = 0;
        for (Panel p : panels) {
            maxSeries = Math.max(maxSeries, p.series.size());
        }
        int panelHeight = MARGIN_TOP + PLOT_HEIGHT + AXIS_SPACE + LEGEND_LINE * maxSeries + 10;
        BufferedImage image = new BufferedImage(columns * PANEL_WIDTH, TITLE_SPACE + rows * panelHeight,
                BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, image.getWidth(), image.getHeight());
            g.setColor(Color.BLACK);
            g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 16));
            g.drawString(title, 12, 24);
            for (int i = 0; i < panels.size(); i++) {
                Graphics2D pg = (Graphics2D) g.create((i % columns) * PANEL_WIDTH,
                        TITLE_SPACE + (i / columns) * panelHeight, PANEL_WIDTH, panelHeight);
                try {
                    drawPanel(pg, panels.get(i));
                } finally {
                    pg.dispose();
                }
            }
        } finally {
            g.dispose();
        }
        save(image, file);
    }

    /** Writes {@code image} to {@code file} as PNG, creating its directory if needed. */
    public static void save(BufferedImage image, Path file) throws IOException {
        Path dir = file.toAbsolutePath().getParent();
        if (dir != null) {
            Files.createDirectories(dir);
        }
        if (!ImageIO.write(image, "png", file.toFile())) {
            throw new IOException("no PNG writer available for " + file);
        }
    }

    private static void drawPanel(Graphics2D g, Panel panel) {
        double xMin = Double.MAX_VALUE;
        double xMax = 0;
        double yMin = Double.MAX_VALUE;
        double yMax = 0;
        for (Series s : panel.series) {
            for (int i = 0; i < s.x.length; i++) {
                if (s.x[i] > 0 && Double.isFinite(s.y[i]) && (!panel.logY || s.y[i] > 0)) {
                    xMin = Math.min(xMin, s.x[i]);
                    xMax = Math.max(xMax, s.x[i]);
                    yMin = Math.min(yMin, s.y[i]);
                    yMax = Math.max(yMax, s.y[i]);
                }
            }
        }
        if (xMax == 0) {
            xMin = 1;
            xMax = 2;
        }
        double lx0 = Math.floor(log2(xMin));
        double lx1 = Math.max(Math.ceil(log2(xMax)), lx0 + 1);

        int left = MARGIN_LEFT;
        int right = PANEL_WIDTH - MARGIN_RIGHT;
        int top = MARGIN_TOP;
        int bottom = MARGIN_TOP + PLOT_HEIGHT;
        YAxis yAxis = new YAxis(panel.logY, yMin, yMax, top, bottom);

        g.setColor(Color.BLACK);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 13));
        g.drawString(panel.title, left, top - 16);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
        FontMetrics fm = g.getFontMetrics();

        // y grid and labels
        for (double y : yAxis.ticks()) {
            int py = yAxis.pixel(y);
            g.setColor(new Color(0xe6e6e6));
            g.drawLine(left, py, right, py);
            g.setColor(Color.DARK_GRAY);
            String label = yAxis.label(y);
            g.drawString(label, left - 6 - fm.stringWidth(label), py + fm.getAscent() / 2 - 1);
        }
        // x ticks at powers of two, labelled sparsely enough to stay readable
        int span = (int) (lx1 - lx0);
        int every = Math.max(1, (span + 7) / 8);
        for (int e = (int) lx0; e <= (int) lx1; e++) {
            int px = (int) Math.round(left + (e - lx0) / (lx1 - lx0) * (right - left));
            g.setColor(new Color(0xf0f0f0));
            g.drawLine(px, top, px, bottom);
            g.setColor(Color.DARK_GRAY);
            g.drawLine(px, bottom, px, bottom + 4);
            if ((e - (int) lx0) % every == 0) {
                String label = Units.bytes(1L << Math.max(0, Math.min(62, e)));
                g.drawString(label, px - fm.stringWidth(label) / 2, bottom + 6 + fm.getAscent());
            }
        }
        g.setColor(Color.BLACK);
        g.drawRect(left, top, right - left, bottom - top);
        g.drawString("message size", (left + right) / 2 - fm.stringWidth("message size") / 2,
                bottom + 22 + fm.getAscent());
        Graphics2D vg = (Graphics2D) g.create();
        try {
            vg.rotate(-Math.PI / 2);
            vg.drawString(panel.yLabel, -(top + bottom) / 2 - fm.stringWidth(panel.yLabel) / 2, 14);
        } finally {
            vg.dispose();
        }

        // lines and legend
        Stroke solid = new BasicStroke(2f);
        Stroke dashed = new BasicStroke(2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f,
                new float[] {7f, 5f}, 0f);
        int legendY = bottom + AXIS_SPACE + LEGEND_LINE - 4;
        for (int s = 0; s < panel.series.size(); s++) {
            Series series = panel.series.get(s);
            Color color = PALETTE[Math.floorMod(series.color, PALETTE.length)];
            g.setColor(color);
            int prevX = -1;
            int prevY = -1;
            for (int i = 0; i < series.x.length; i++) {
                if (!(series.x[i] > 0) || !Double.isFinite(series.y[i]) || panel.logY && !(series.y[i] > 0)) {
                    prevX = -1;
                    continue;
                }
                int px = (int) Math.round(left + (log2(series.x[i]) - lx0) / (lx1 - lx0) * (right - left));
                int py = yAxis.pixel(series.y[i]);
                g.fillOval(px - 3, py - 3, 7, 7);
                if (prevX >= 0) {
                    g.setStroke(series.dashed ? dashed : solid);
                    g.drawLine(prevX, prevY, px, py);
                }
                prevX = px;
                prevY = py;
            }
            g.setStroke(series.dashed ? dashed : solid);
            g.drawLine(left, legendY - 4, left + 30, legendY - 4);
            g.setColor(Color.BLACK);
            g.drawString(series.name, left + 38, legendY);
            legendY += LEGEND_LINE;
        }
        g.setStroke(new BasicStroke(1f));
    }

    private static double log2(double v) {
        return Math.log(v) / Math.log(2);
    }

    static double niceStep(double max) {
        double raw = max / 5;
        double magnitude = Math.pow(10, Math.floor(Math.log10(raw)));
        double r = raw / magnitude;
        double nice = r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10;
        return nice * magnitude;
    }

    private static String formatTick(double value, double step) {
        int decimals = step >= 1 ? 0 : (int) Math.ceil(-Math.log10(step));
        return String.format(Locale.ROOT, "%." + decimals + "f", value);
    }
}
