package dev.leasehold;

import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The service's {@link LeaseListener}s. A listener that throws is logged and ignored, so it never
 * leaks a lease or stops the listeners after it. Immutable and thread-safe.
 */
final class Listeners {

    private static final Logger log = LoggerFactory.getLogger(Listeners.class);

    private final List<LeaseListener> listeners;
    private final boolean active;

    Listeners(List<LeaseListener> listeners) {
        this.listeners = listeners;
        this.active = !listeners.isEmpty();
    }

    /** Whether anyone listens: without a listener no event needs to be built at all. */
    boolean active() {
        return active;
    }

    /** Hands the event to every listener, in order, on the current thread. */
    void emit(LeaseEvent event) {
        for (LeaseListener listener : listeners) {
            try {
                listener.onEvent(event);
            } catch (VirtualMachineError e) {
                throw e;
            } catch (Throwable e) {
                log.warn("lease listener {} failed on {} of {}; ignored", listener, event.type(), event.key(), e);
            }
        }
    }
}
