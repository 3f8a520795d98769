# bash completion for vmm (installed as share/bash-completion/completions/vmm).
# lint.man_page checks that the options offered here are the commands' own.

_vmm() {
	local cur prev cmd
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	cmd=${COMP_WORDS[1]:-}

	if [ "$COMP_CWORD" -eq 1 ]; then
		mapfile -t COMPREPLY < <(compgen -W "run migrate status info pause resume stop --help --version" -- "$cur")
		return
	fi
	case $prev in
	--vm)
		# VM names: the API sockets in the run directory
		local dir=${VMM_RUN_DIR:-}
		if [ -z "$dir" ]; then
			if [ "$(id -u)" = 0 ]; then dir=/run/vmm
			elif [ -n "${XDG_RUNTIME_DIR:-}" ]; then dir=$XDG_RUNTIME_DIR/vmm
			else dir=/tmp/vmm-$(id -u)
			fi
		fi
		local names=()
		local s
		for s in "$dir"/*.sock "$dir"/*.sock.incoming; do
			[ -S "$s" ] || continue
			s=${s##*/}
			names+=("${s%%.sock*}")
		done
		mapfile -t COMPREPLY < <(compgen -W "${names[*]}" -- "$cur")
		return
		;;
	--api-socket | --initrd | --set)
		[ "$prev" = --set ] && return
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return
		;;
	esac
	# An option that takes one of a fixed set of words.
	local words=
	case $prev in
	--mode) words="precopy postcopy auto" ;;
	--compress) words="zstd zstd:1 zstd:3 none" ;;
	--no-converge) words="switchover fail" ;;
	--decide) words="resume run discard" ;;
	--seccomp) words="on off" ;;
	--log-format) words="text json" ;;
	--log-level) words="error warn info debug" ;;
	esac
	if [ -n "$words" ]; then
		mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
		return
	fi
	local opts
	case $cmd in
	run)
		opts="--set --initrd --incoming --api-socket --timing --log-format --log-level --seccomp
			--help"
		if [[ $cur != -* ]]; then
			mapfile -t COMPREPLY < <(compgen -f -X '!*.cfg' -- "$cur"; compgen -d -- "$cur")
			return
		fi
		;;
	migrate)
		opts="--to --vm --api-socket --mode --postcopy-after --downtime-ms --max-bandwidth
			--connections --compress --harvest-threads --clear-chunk --max-passes --max-time-ms
			--no-converge --no-final-bitmap --timeout-ms --json --progress --status --cancel --resume
			--recover --decide --list-params --help"
		;;
	status | info | pause | resume | stop)
		opts="--vm --api-socket --json --help"
		;;
	*)
		return
		;;
	esac
	mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
}
complete -F _vmm vmm
