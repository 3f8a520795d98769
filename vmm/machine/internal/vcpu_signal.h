/* SPDX-License-Identifier: Apache-2.0 */
/* The signal that kicks a vCPU thread out of KVM_RUN. */
#ifndef VMM_VCPU_SIGNAL_H
#define VMM_VCPU_SIGNAL_H

#include <signal.h>

#define SIG_VCPU_KICK SIGUSR1

#endif
