/*
 * fault: crash points for fault-injection tests of the writers that must
 * not lose data (checkpoint sets). With LC_FAULT=NAME:N in the
 * environment, the Nth call of lc_fault_point(NAME) in the process kills
 * it with SIGKILL, as a power cut or the OOM killer would at that point;
 * without it, a fault point costs one comparison.
 */
#ifndef LC_FAULT_H
#define LC_FAULT_H

void lc_fault_point(const char *name);

#endif
