package dev.leasehold.spring.internal;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.scheduling.TaskScheduler;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;

/** The task scheduler Leasehold's background jobs run on. */
public final class Schedulers {

    private Schedulers() {}

    /** The application's one task scheduler, else a daemon one of Leasehold's own. */
    public static TaskScheduler ownOrShared(ObjectProvider<TaskScheduler> schedulers, String threadPrefix) {
        return schedulers.getIfUnique(() -> {
            ThreadPoolTaskScheduler own = new ThreadPoolTaskScheduler();
            own.setThreadNamePrefix(threadPrefix);
            own.setDaemon(true);
            own.initialize();
            return own;
        });
    }
}
