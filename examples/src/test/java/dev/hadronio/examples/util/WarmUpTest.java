package dev.hadronio.examples.util;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.junit.Test;

public class WarmUpTest {

    @Test
    public void compilerThreadsAreKnownByTheirShortenedNames() {
        assertTrue(WarmUp.isCompiler("C2 CompilerThre"));
        assertTrue(WarmUp.isCompiler("C1 CompilerThre"));
        assertFalse(WarmUp.isCompiler("Common-Cleaner"));
        assertFalse(WarmUp.isCompiler("main"));
    }

    @Test
    public void thisJvmsCompilerThreadsHaveUsedCpu() throws IOException {
        long total = 0;
        int found = 0;
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Paths.get("/proc/self/task"))) {
            for (Path task : tasks) {
                long nanos = WarmUp.compilerNanos(task);
                if (nanos >= 0) {
                    found++;
                    total += nanos;
                }
            }
        }
        assertTrue("compiler threads under /proc/self/task", found > 0);
        assertTrue("the compilers compiled the test's classes", total > 0);
    }

    @Test
    public void aFixedWarmUpNeitherWaitsForTheCompilersNorSaysSo() {
        List<String> said = new ArrayList<>();
        WarmUp warm = new WarmUp(0, 0);
        assertTrue(warm.over(said::add));
        assertTrue(said.isEmpty());
    }

    @Test
    public void aJvmWhoseCompilersCannotBeReadLeavesTheLeastWarmUpAndSaysWhy() throws InterruptedException {
        List<String> said = new ArrayList<>();
        WarmUp warm = new WarmUp(0.05, 60, Long.MAX_VALUE);
        warm.await(said::add);
        assertEquals(1, said.size());
        assertTrue(said.get(0), said.get(0).startsWith("warm-up over after"));
        assertTrue(said.get(0), said.get(0).contains("could not be read"));
        assertTrue(warm.seconds() < 60);
        assertTrue(warm.over(said::add));
        assertEquals("said once", 1, said.size());
    }

    @Test
    public void theWarmUpEndsWhenTheCompilersAreQuietOrAtItsMost() throws InterruptedException {
        List<String> said = new ArrayList<>();
        WarmUp warm = new WarmUp(0, 3);
        warm.await(said::add);
        String last = said.get(said.size() - 1);
        assertTrue(last, last.startsWith("warm-up over after"));
        assertTrue(last, last.contains("% of a core"));
        for (String line : said.subList(0, said.size() - 1)) {
            assertTrue(line, line.contains("waiting for them"));
        }
    }

    @Test
    public void quietMeansBelowTheShare() {
        assertTrue(WarmUp.quiet(0));
        assertTrue(WarmUp.quiet(WarmUp.QUIET / 2));
        assertFalse(WarmUp.quiet(WarmUp.QUIET));
        assertFalse(WarmUp.quiet(1.0));
    }
}
