# bash completion for vmm (installed as share/bash-completion/completions/vmm).
# lint.man_page checks that the options offered here are the commands' own.
# `vmm migrate`'s options and their words come from its --help, made from
# the parameter table (migration/api/migration_params.h), so they are never
# listed here by hand.

# The --help of command $1 of the vmm being completed.
_vmm_help() {
	"${COMP_WORDS[0]}" "$1" --help 2>/dev/null
}

_vmm() {
	local cur prev cmd
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	cmd=${COMP_WORDS[1]:-}

	if [ "$COMP_CWORD" -eq 1 ]; then
		mapfile -t COMPREPLY < <(compgen -W "run migrate snapshot status info pause resume stop cpu-features --help --version" -- "$cur")
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
	--api-socket | --initrd | --set | --restore | --to)
		# directories for --restore and snapshot --to; migrate --to is HOST:PORT
		if [ "$prev" = --restore ] || { [ "$prev" = --to ] && [ "$cmd" = snapshot ]; }; then
			mapfile -t COMPREPLY < <(compgen -d -- "$cur")
			return
		fi
		[ "$prev" = --to ] && return
		[ "$prev" = --set ] && return
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return
		;;
	esac
	# An option that takes one of a fixed set of words.
	local words=
	case $prev in
	--compress) words="zstd zstd:1 zstd:3 none" ;;
	--decide) words="resume run discard" ;;
	--seccomp) words="on off" ;;
	--log-format) words="text json" ;;
	--log-level) words="error warn info debug" ;;
	esac
	# A migration parameter's words: its --help line "  --mode precopy|postcopy|auto".
	if [ -z "$words" ] && [ "$cmd" = migrate ] && [[ $prev == --* ]]; then
		words=$(_vmm_help migrate |
			sed -nE "s/^ +$prev ([a-z0-9]+(\|[a-z0-9]+)+)( .*)?\$/\1/p" | tr '|' ' ')
	fi
	if [ -n "$words" ]; then
		mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
		return
	fi
	local opts
	case $cmd in
	run)
		opts="--set --initrd --incoming --restore --lazy --restore-wait --api-socket --timing --log-format
			--log-level --seccomp --help"
		if [[ $cur != -* ]]; then
			mapfile -t COMPREPLY < <(compgen -f -X '!*.cfg' -- "$cur"; compgen -d -- "$cur")
			return
		fi
		;;
	migrate)
		opts=$(_vmm_help migrate | sed -nE 's/^ +(-[a-zA-Z], )?(--[a-z][a-z-]*).*/\2/p')
		;;
	snapshot)
		opts="--to --vm --api-socket --live --downtime-ms --max-passes --max-time-ms --diff --stop --threads --format-version --timeout-ms --json --help"
		;;
	status | info | pause | resume | stop)
		opts="--vm --api-socket --json --help"
		;;
	cpu-features)
		if [ "$prev" = --common ] || [[ $cur != -* && " ${COMP_WORDS[*]} " == *" --common "* ]]; then
			mapfile -t COMPREPLY < <(compgen -f -X '!*.json' -- "$cur"; compgen -d -- "$cur")
			return
		fi
		opts="--host --common --list --json --help"
		;;
	*)
		return
		;;
	esac
	mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
}
complete -F _vmm vmm
