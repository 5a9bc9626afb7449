package dev.leasehold.faults;

import java.util.List;

/** One fault scenario, run on each backend it applies to. */
public interface Scenario {

    /** The title the report prints, numbered as in the fault suite's list. */
    String title();

    /** The backends it runs on, such as {@code redis}, {@code postgresql}, {@code mariadb}. */
    List<String> backends();

    /**
     * Runs it once on {@code backend}.
     *
     * @throws org.opentest4j.TestAbortedException if a service it needs is not reachable
     */
    Outcome run(String backend, Profile profile) throws Exception;

    /** The scenarios, in order. */
    static List<Scenario> all() {
        return List.of(
                new PausedHolder(),
                new StoreRestart(),
                new Failover(),
                new PausedStore(),
                new ConnectionCut(),
                new CrashedService(),
                new ClockShift(),
                new StormAcrossInstances(),
                new Partition(),
                new KilledHolder(),
                new PostgresFailover(),
                new PostgresFailover(true),
                new EtcdFaults());
    }
}
