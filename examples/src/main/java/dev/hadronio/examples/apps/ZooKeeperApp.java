package dev.hadronio.examples.apps;

import java.io.File;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.server.ServerCnxnFactory;
import org.apache.zookeeper.server.ZooKeeperServer;

/**
 * ZooKeeper 3.8: a standalone server (its NIO connection factory: selector threads and a worker
 * pool) and its client (NIO), reading a 64-byte znode.
 */
@SuppressWarnings("try") // close() of these resources may throw InterruptedException: callers let it through
final class ZooKeeperApp implements App {
    static final String PATH = "/hadronio-bench";
    static final int DATA = 64;

    @Override
    public String name() {
        return "zookeeper";
    }

    @Override
    public String request() {
        return "getData, 64 B znode";
    }

    @Override
    public Server serve(InetSocketAddress address) throws Exception {
        // No admin server (an embedded Jetty on port 8080) and no JMX beans.
        System.setProperty("zookeeper.admin.enableServer", "false");
        System.setProperty("zookeeper.jmx.log4j.disable", "true");
        File data = Files.createTempDirectory("hadronio-zookeeper").toFile();
        ZooKeeperServer zookeeper = new ZooKeeperServer(data, data, 2000);
        ServerCnxnFactory factory = ServerCnxnFactory.createFactory(address, 0);
        factory.startup(zookeeper);
        return new Server() {
            @Override
            public int port() {
                return factory.getLocalPort();
            }

            @Override
            public void close() {
                factory.shutdown();
                zookeeper.shutdown();
                delete(data);
            }
        };
    }

    private static void delete(File file) {
        File[] children = file.listFiles();
        if (children != null) {
            for (File child : children) {
                delete(child);
            }
        }
        file.delete();
    }

    @Override
    public Client connect(InetSocketAddress address) throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zookeeper = new ZooKeeper(address.getHostString() + ":" + address.getPort(), 30_000, event -> {
            if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        if (!connected.await(30, TimeUnit.SECONDS)) {
            zookeeper.close();
            throw new IllegalStateException("the ZooKeeper client did not connect within 30 s");
        }
        try {
            zookeeper.create(PATH, new byte[DATA], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        } catch (KeeperException.NodeExistsException e) {
            // created by an earlier client
        }
        return new Client() {
            @Override
            public void call() throws Exception {
                check(zookeeper.getData(PATH, false, null));
            }

            @Override
            public boolean callAsync(Consumer<Throwable> done) {
                zookeeper.getData(PATH, false, (rc, path, context, bytes, stat) -> {
                    if (rc != KeeperException.Code.OK.intValue()) {
                        done.accept(KeeperException.create(KeeperException.Code.get(rc), path));
                        return;
                    }
                    try {
                        check(bytes);
                        done.accept(null);
                    } catch (RuntimeException e) {
                        done.accept(e);
                    }
                }, null);
                return true;
            }

            @Override
            public void close() throws Exception {
                zookeeper.close();
            }
        };
    }

    static void check(byte[] data) {
        if (data == null || data.length != DATA) {
            throw new IllegalStateException("unexpected znode data: " + (data == null ? "none" : data.length + " bytes"));
        }
    }
}
