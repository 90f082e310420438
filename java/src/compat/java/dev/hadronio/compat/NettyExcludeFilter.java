package dev.hadronio.compat;

import org.junit.platform.engine.FilterResult;
import org.junit.platform.engine.TestDescriptor;
import org.junit.platform.engine.TestSource;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.launcher.PostDiscoveryFilter;

/**
 * Removes the tests named in the netty exclusion list (see {@link NettyExcludes}) from the test plan.
 * Registered through {@code META-INF/services}, so the unmodified JUnit console launcher picks it up; it
 * does nothing unless the system property {@value NettyExcludes#FILE_PROPERTY} names a list.
 *
 * <p>The launcher removes only leaf descriptors, so a class entry is applied to each of the class's test
 * methods (and parameterized test templates), which is also the unit the excluded count is given in.
 */
public final class NettyExcludeFilter implements PostDiscoveryFilter {
    @Override
    public FilterResult apply(TestDescriptor descriptor) {
        NettyExcludes excludes = NettyExcludes.get();
        if (excludes.isEmpty() || !descriptor.getChildren().isEmpty()) {
            return FilterResult.included("not a test method");
        }
        TestSource source = descriptor.getSource().orElse(null);
        String entry = null;
        if (source instanceof MethodSource) {
            MethodSource method = (MethodSource) source;
            entry = excludes.match(descriptor.getUniqueId().toString(), method.getClassName(), method.getMethodName());
        } else if (source instanceof ClassSource) {
            ClassSource clazz = (ClassSource) source;
            entry = excludes.match(descriptor.getUniqueId().toString(), clazz.getClassName(), null);
        }
        return entry == null
                ? FilterResult.included("not in the exclusion list")
                : FilterResult.excluded(excludes.reason(entry));
    }
}
