//! The per-sample counters by name: what each counts and its column name.

/// One per-sample counter. [`Event::name`] is its column name in results
/// files (units in the name where it has one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// ns this thread ran on a CPU (perf `task-clock`).
    TaskClock,
    /// page faults, minor and major (perf `page-faults`).
    PageFaults,
    /// moves of the thread to another CPU (perf `cpu-migrations`).
    CpuMigrations,
    /// every switch away from the thread, both kinds (perf `context-switches`).
    ContextSwitches,
    /// switches away because the thread blocked (getrusage `ru_nvcsw`).
    VoluntarySwitches,
    /// switches away because the scheduler preempted the thread (getrusage `ru_nivcsw`).
    InvoluntarySwitches,
    /// user-space instructions retired (perf `instructions:u`).
    Instructions,
    /// user-space CPU cycles (perf `cycles:u`).
    Cycles,
    /// mispredicted branches (perf `branch-misses:u`).
    BranchMisses,
    /// last-level cache misses (perf `cache-misses:u`).
    CacheMisses,
}

impl Event {
    /// Every event, in column order.
    pub const ALL: [Event; 10] = [
        Event::TaskClock,
        Event::PageFaults,
        Event::CpuMigrations,
        Event::ContextSwitches,
        Event::VoluntarySwitches,
        Event::InvoluntarySwitches,
        Event::Instructions,
        Event::Cycles,
        Event::BranchMisses,
        Event::CacheMisses,
    ];

    /// The column name (snake case, units where there are any).
    pub fn name(self) -> &'static str {
        match self {
            Event::TaskClock => "task_clock_ns",
            Event::PageFaults => "page_faults",
            Event::CpuMigrations => "cpu_migrations",
            Event::ContextSwitches => "context_switches",
            Event::VoluntarySwitches => "voluntary_switches",
            Event::InvoluntarySwitches => "involuntary_switches",
            Event::Instructions => "instructions",
            Event::Cycles => "cycles",
            Event::BranchMisses => "branch_misses",
            Event::CacheMisses => "cache_misses",
        }
    }

    /// True for events counted by the CPU's PMU (absent on most VMs).
    pub fn is_hardware(self) -> bool {
        matches!(
            self,
            Event::Instructions | Event::Cycles | Event::BranchMisses | Event::CacheMisses
        )
    }
}
