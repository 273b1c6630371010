# SPDX-License-Identifier: LGPL-2.1-or-later
# bash completion for edfctl(1). Group paths and reservation ids come from the running edfd
# (edfctl status/list --json); without it they are simply not offered.

__edfctl_groups() {
        edfctl status --json 2>/dev/null | sed -n 's/^ *"path": *"\([^"]*\)",\{0,1\}$/\1/p'
}

__edfctl_ids() {
        edfctl list --json 2>/dev/null | sed -n 's/^ *"id": *\([0-9]*\),\{0,1\}$/\1/p'
}

# A duration or percentage being typed: offer the units after the digits.
__edfctl_units() {
        local cur=$1; shift
        if [[ $cur =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
                local u
                COMPREPLY=()
                for u in "$@"; do COMPREPLY+=("$cur$u"); done
        fi
}

_edfctl() {
        local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
        local i verb= subverb= npos=0 dashdash=

        for ((i = 1; i < COMP_CWORD; i++)); do
                case ${COMP_WORDS[i]} in
                --) dashdash=$i; break ;;
                -g|--group|-T|--runtime|-D|--deadline|-P|--period|-t|--tid|-p|--pid|--bandwidth|--work|--margin|--cpus|--capacity|--server|--fit|--split|--startup|--overhead|--duration)
                        ((i++)) ;;
                -*) ;;
                *)
                        if [[ -z $verb ]]; then
                                verb=${COMP_WORDS[i]}
                        elif [[ $verb == group && -z $subverb ]]; then
                                subverb=${COMP_WORDS[i]}
                        else
                                ((npos++))
                        fi ;;
                esac
        done

        # admit/run ... -- COMMAND [ARG...]: complete the command as bash would.
        if [[ -n $dashdash ]]; then
                if declare -F _command_offset >/dev/null; then
                        _command_offset $((dashdash + 1))
                elif [[ $COMP_CWORD -eq $((dashdash + 1)) ]]; then
                        COMPREPLY=($(compgen -c -- "$cur"))
                else
                        COMPREPLY=($(compgen -f -- "$cur"))
                fi
                return
        fi

        case $prev in
        -g|--group)
                COMPREPLY=($(compgen -W "$(__edfctl_groups)" -- "$cur"))
                return ;;
        -t|--tid|-p|--pid)
                if declare -F _pids >/dev/null; then
                        _pids
                else
                        COMPREPLY=($(compgen -W "$(cd /proc && compgen -G '[0-9]*')" -- "$cur"))
                fi
                return ;;
        -T|--runtime|-D|--deadline|-P|--period|--work|--startup|--duration)
                __edfctl_units "$cur" ns us ms s
                return ;;
        --overhead)
                COMPREPLY=($(compgen -W "auto none" -- "$cur"))
                return ;;
        --bandwidth|--margin)
                __edfctl_units "$cur" %
                return ;;
        --capacity)
                COMPREPLY=($(compgen -W "95% 90% 100% unlimited" -- "$cur"))
                return ;;
        --server)
                COMPREPLY=($(compgen -W "50ms/1s none" -- "$cur"))
                return ;;
        --fit)
                COMPREPLY=($(compgen -W "best first worst" -- "$cur"))
                return ;;
        --cpus)
                return ;;
        esac

        local opts='-h --help'
        case $verb in
        '')
                COMPREPLY=($(compgen -W "status list admit run release group reload monitor plan calibrate help -h --help --version" -- "$cur"))
                return ;;
        status|list)
                opts+=' --json' ;;
        plan)
                opts+=' --live --cpus --capacity --server --fit --json'
                if [[ $cur != -* && $npos -eq 0 ]]; then
                        COMPREPLY=($(compgen -f -- "$cur"))
                        return
                fi ;;
        admit)
                opts+=' -g --group -T --runtime --work --margin --overhead -P --period -D --deadline --reclaim --overrun-signal --move -t --tid -p --pid --split --startup --' ;;
        run)
                opts+=' -g --group --margin --overhead --' ;;
        calibrate)
                opts+=' -g --group --duration'
                if [[ $cur != -* && $npos -eq 0 ]]; then
                        COMPREPLY=($(compgen -f -- "$cur"))
                        return
                fi ;;
        release)
                opts+=' -t --tid -p --pid'
                if [[ $cur != -* && $npos -eq 0 ]]; then
                        COMPREPLY=($(compgen -W "$(__edfctl_ids)" -- "$cur"))
                        return
                fi ;;
        group)
                if [[ -z $subverb ]]; then
                        COMPREPLY=($(compgen -W "create set remove" -- "$cur"))
                        return
                fi
                [[ $subverb == create || $subverb == set ]] && opts+=' -T --runtime -P --period --bandwidth'
                if [[ $cur != -* && $npos -eq 0 ]]; then
                        if [[ $subverb == create ]]; then
                                # A new group goes under an existing one.
                                COMPREPLY=($(compgen -W "$(__edfctl_groups | sed -n '/^\/$/!s|$|/|p')" -- "$cur"))
                                compopt -o nospace 2>/dev/null
                        else
                                COMPREPLY=($(compgen -W "$(__edfctl_groups | grep -vx /)" -- "$cur"))
                        fi
                        return
                fi ;;
        esac
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}

complete -F _edfctl edfctl
