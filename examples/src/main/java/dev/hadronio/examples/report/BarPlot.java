package dev.hadronio.examples.report;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * Horizontal bars of "times better" on a logarithmic axis with a line at 1 (par with the JDK):
 * green to the right of it, red to the left.
 */
public final class BarPlot {
    /** One bar: its label and how many times better hadroNIO is. */
    public static final class Bar {
        final String label;
        final double value;

        public Bar(String label, double value) {
            this.label = label;
            this.value = value;
        }
    }

    private static final int WIDTH = 1100;
    private static final int LABEL_WIDTH = 430;
    private static final int ROW = 26;
    private static final int TOP = 50;
    private static final int BOTTOM = 40;

    private BarPlot() {
    }

    public static void writePng(Path file, String title, List<Bar> bars) throws IOException {
        if (bars.isEmpty()) {
            return;
        }
        double low = 0.5;
        double high = 2;
        for (Bar bar : bars) {
            if (bar.value > 0 && Double.isFinite(bar.value)) {
                low = Math.min(low, bar.value / 1.2);
                high = Math.max(high, bar.value * 1.2);
            }
        }
        double logLow = Math.log10(low);
        double logHigh = Math.log10(high);
        int plotLeft = LABEL_WIDTH + 10;
        int plotWidth = WIDTH - plotLeft - 80;
        int height = TOP + bars.size() * ROW + BOTTOM;
        BufferedImage image = new BufferedImage(WIDTH, height, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, WIDTH, height);
            g.setColor(Color.BLACK);
            g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 16));
            g.drawString(title, 12, 26);
            g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
            int one = plotLeft + (int) ((0 - logLow) / (logHigh - logLow) * plotWidth);
            for (int i = 0; i < bars.size(); i++) {
                Bar bar = bars.get(i);
                int y = TOP + i * ROW;
                g.setColor(Color.BLACK);
                g.drawString(bar.label, 12, y + 16);
                if (!(bar.value > 0) || !Double.isFinite(bar.value)) {
                    continue;
                }
                int x = plotLeft + (int) ((Math.log10(bar.value) - logLow) / (logHigh - logLow) * plotWidth);
                g.setColor(bar.value >= 1 ? new Color(0x2e7d32) : new Color(0xc62828));
                g.fillRect(Math.min(one, x), y + 4, Math.max(1, Math.abs(x - one)), ROW - 8);
                g.setColor(Color.BLACK);
                g.drawString(String.format(Locale.ROOT, "%.2fx", bar.value), Math.max(one, x) + 4, y + 16);
            }
            g.setColor(Color.DARK_GRAY);
            g.setStroke(new BasicStroke(1.5f));
            g.drawLine(one, TOP - 6, one, TOP + bars.size() * ROW);
            g.drawString("1x (JDK)", one - 24, TOP + bars.size() * ROW + 18);
        } finally {
            g.dispose();
        }
        LinePlot.save(image, file);
    }
}
