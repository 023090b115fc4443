! A plain Fortran MPI program (no sparsecomm in it), built twice: with `use mpi` and, with
! -DUSE_F08, with `use mpi_f08`. On a distributed graph (each rank: the next two and the
! previous rank of a ring, and itself) it calls, per round, fifteen forms (thirteen with
! mpi_f08, which has no binding for Open MPI's MPIX_ persistent collectives):
!   0-3 the blocking MPI_NEIGHBOR_ALLGATHER, _ALLTOALL, _ALLGATHERV, _ALLTOALLV;
!   4 MPI_INEIGHBOR_ALLGATHER + MPI_WAIT;
!   5 MPI_NEIGHBOR_ALLGATHER on MPI_BOTTOM with types of absolute addresses;
!   6 MPI_INEIGHBOR_ALLTOALL and a message to itself (MPI_IRECV, MPI_ISEND) completed
!     together by MPI_WAITALL with statuses (the self message's status checked);
!   7 MPI_INEIGHBOR_ALLGATHERV completed by an MPI_TEST loop;
!   8 MPI_INEIGHBOR_ALLTOALLV and a message to itself completed by MPI_WAITANY until
!     MPI_UNDEFINED (each index seen once), then MPI_REQUEST_GET_STATUS on a null request;
!   9 (use mpi) MPIX_NEIGHBOR_ALLGATHER_INIT, MPI_START, MPI_WAIT twice, MPI_REQUEST_FREE;
!   10-13 MPI_INEIGHBOR_ALLGATHER, _ALLGATHERV, _ALLTOALL, _ALLTOALLV, each with a message
!     to itself, completed by MPI_TESTALL, MPI_WAITSOME, MPI_TESTANY, MPI_TESTSOME loops;
!   14 (use mpi) MPIX_NEIGHBOR_ALLGATHER_INIT and a persistent message to itself
!     (MPI_SEND_INIT, MPI_RECV_INIT) started by one MPI_STARTALL, MPI_WAITALL, freed;
! and checks every received value against MPI's definition.
!
!   fortran_nbr [calls, default 50]
!
! Prints "fortran_nbr (API): N calls, V values checked on P ranks, W wrong".
program fortran_nbr
#ifdef USE_F08
  use mpi_f08
#else
  use mpi
  use mpi_ext
#endif
  implicit none
#ifdef USE_F08
  type(MPI_Comm) :: g
  type(MPI_Request) :: req, reqs(3)
  type(MPI_Datatype) :: abs_s, abs_r
  type(MPI_Status) :: sts(3), st1
  character(len=*), parameter :: api = "use mpi_f08"
  integer, parameter :: forms = 13
#else
  integer :: g, req, abs_s, abs_r, reqs(3)
  integer :: sts(MPI_STATUS_SIZE, 3), st1(MPI_STATUS_SIZE)
  character(len=*), parameter :: api = "use mpi"
  integer, parameter :: forms = 15
#endif
  logical :: done, hit(3)
  integer :: selfin, selfout, idx, rep, outc, idxs(3), pending
  integer, parameter :: deg = 4
  integer :: ierr, p, me, c, f, i, j, u, n, k, seen, calls, s
  integer :: src(deg), dst(deg), sdst(deg), cnt(deg), dsp(deg), one(1)
  integer(kind=MPI_ADDRESS_KIND) :: addr(1)
  integer, allocatable :: sb(:), rb(:)
  integer(kind=8) :: mine(2), total(2)
  character(len=32) :: arg

  call MPI_Init(ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, p, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
  calls = 50
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) calls
  end if
  dst = [mod(me + 1, p), mod(me + 2, p), mod(me - 1 + p, p), me]
  src = [mod(me - 1 + p, p), mod(me - 2 + 2 * p, p), mod(me + 1, p), me]
  call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, deg, src, MPI_UNWEIGHTED, deg, dst, MPI_UNWEIGHTED, &
                                      MPI_INFO_NULL, .false., g, ierr)
  mine = 0
  do c = 1, calls
    n = 1 + mod(c, 5)
    allocate (sb(deg * n), rb(deg * n))
    do i = 1, deg
      cnt(i) = n
      dsp(i) = (i - 1) * n
    end do
    do f = 0, 14
#ifdef USE_F08
      if (f == 9 .or. f == 14) cycle
#endif
      do j = 1, deg
        do u = 1, n
          if (f == 1 .or. f == 3 .or. f == 6 .or. f == 8 .or. f == 12 .or. f == 13) then
            sb((j - 1) * n + u) = val(me, c, f, j - 1, u)
          else
            sb((j - 1) * n + u) = val(me, c, f, 0, u)
          end if
        end do
      end do
      rb = -1
      select case (f)
      case (0)
        call MPI_Neighbor_allgather(sb, n, MPI_INTEGER, rb, n, MPI_INTEGER, g, ierr)
      case (1)
        call MPI_Neighbor_alltoall(sb, n, MPI_INTEGER, rb, n, MPI_INTEGER, g, ierr)
      case (2)
        call MPI_Neighbor_allgatherv(sb, n, MPI_INTEGER, rb, cnt, dsp, MPI_INTEGER, g, ierr)
      case (3)
        call MPI_Neighbor_alltoallv(sb, cnt, dsp, MPI_INTEGER, rb, cnt, dsp, MPI_INTEGER, g, ierr)
      case (4)
        call MPI_Ineighbor_allgather(sb, n, MPI_INTEGER, rb, n, MPI_INTEGER, g, req, ierr)
        call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
      case (5)
        ! one block of n integers at sb's absolute address; receive blocks at rb's (each
        ! block one type extent apart: the type spans n integers)
        one(1) = n
        call MPI_Get_address(sb, addr(1), ierr)
        call MPI_Type_create_hindexed(1, one, addr, MPI_INTEGER, abs_s, ierr)
        call MPI_Type_commit(abs_s, ierr)
        call MPI_Get_address(rb, addr(1), ierr)
        call MPI_Type_create_hindexed(1, one, addr, MPI_INTEGER, abs_r, ierr)
        call MPI_Type_commit(abs_r, ierr)
        call MPI_Neighbor_allgather(MPI_BOTTOM, 1, abs_s, MPI_BOTTOM, 1, abs_r, g, ierr)
        call MPI_Type_free(abs_s, ierr)
        call MPI_Type_free(abs_r, ierr)
      case (6)
        selfout = 7000 + c
        selfin = -1
        call MPI_Ineighbor_alltoall(sb, n, MPI_INTEGER, rb, n, MPI_INTEGER, g, reqs(1), ierr)
        call MPI_Irecv(selfin, 1, MPI_INTEGER, me, 5, MPI_COMM_WORLD, reqs(2), ierr)
        call MPI_Isend(selfout, 1, MPI_INTEGER, me, 5, MPI_COMM_WORLD, reqs(3), ierr)
        call MPI_Waitall(3, reqs, sts, ierr)
        if (selfin /= 7000 + c) mine(2) = mine(2) + 1
#ifdef USE_F08
        if (sts(2)%MPI_SOURCE /= me .or. sts(2)%MPI_TAG /= 5) mine(2) = mine(2) + 1
        if (reqs(1) /= MPI_REQUEST_NULL .or. reqs(2) /= MPI_REQUEST_NULL) mine(2) = mine(2) + 1
#else
        if (sts(MPI_SOURCE, 2) /= me .or. sts(MPI_TAG, 2) /= 5) mine(2) = mine(2) + 1
        if (reqs(1) /= MPI_REQUEST_NULL .or. reqs(2) /= MPI_REQUEST_NULL) mine(2) = mine(2) + 1
#endif
      case (7)
        call MPI_Ineighbor_allgatherv(sb, n, MPI_INTEGER, rb, cnt, dsp, MPI_INTEGER, g, req, ierr)
        done = .false.
        do while (.not. done)
          call MPI_Test(req, done, st1, ierr)
        end do
        if (req /= MPI_REQUEST_NULL) mine(2) = mine(2) + 1
      case (8)
        selfout = 8000 + c
        selfin = -1
        call MPI_Ineighbor_alltoallv(sb, cnt, dsp, MPI_INTEGER, rb, cnt, dsp, MPI_INTEGER, g, reqs(1), ierr)
        call MPI_Isend(selfout, 1, MPI_INTEGER, me, 6, MPI_COMM_WORLD, reqs(2), ierr)
        call MPI_Irecv(selfin, 1, MPI_INTEGER, me, 6, MPI_COMM_WORLD, reqs(3), ierr)
        hit = .false.
        do
          call MPI_Waitany(3, reqs, idx, st1, ierr)
          if (idx == MPI_UNDEFINED) exit
          if (.not. note(idx)) exit
        end do
        if (.not. all(hit) .or. selfin /= 8000 + c) mine(2) = mine(2) + 1
        call MPI_Request_get_status(reqs(1), done, st1, ierr)
        if (.not. done) mine(2) = mine(2) + 1
#ifndef USE_F08
      case (9)
        call MPIX_Neighbor_allgather_init(sb, n, MPI_INTEGER, rb, n, MPI_INTEGER, g, MPI_INFO_NULL, req, ierr)
        do rep = 1, 2
          rb = -1
          call MPI_Start(req, ierr)
          call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
        end do
        if (req == MPI_REQUEST_NULL) mine(2) = mine(2) + 1  ! persistent: still allocated
        call MPI_Request_free(req, ierr)
        if (req /= MPI_REQUEST_NULL) mine(2) = mine(2) + 1
#endif
      case (10:13)
        selfout = 9000 + f * 100 + c
        selfin = -1
        select case (f)
        case (10)
          call MPI_Ineighbor_allgather(sb, n, MPI_INTEGER, rb, n, MPI_INTEGER, g, reqs(1), ierr)
        case (11)
          call MPI_Ineighbor_allgatherv(sb, n, MPI_INTEGER, rb, cnt, dsp, MPI_INTEGER, g, reqs(1), ierr)
        case (12)
          call MPI_Ineighbor_alltoall(sb, n, MPI_INTEGER, rb, n, MPI_INTEGER, g, reqs(1), ierr)
        case (13)
          call MPI_Ineighbor_alltoallv(sb, cnt, dsp, MPI_INTEGER, rb, cnt, dsp, MPI_INTEGER, g, reqs(1), ierr)
        end select
        call MPI_Irecv(selfin, 1, MPI_INTEGER, me, 7, MPI_COMM_WORLD, reqs(2), ierr)
        call MPI_Isend(selfout, 1, MPI_INTEGER, me, 7, MPI_COMM_WORLD, reqs(3), ierr)
        hit = .false.
        select case (f)
        case (10)
          done = .false.
          do while (.not. done)
            call MPI_Testall(3, reqs, done, sts, ierr)
          end do
          hit = .true.
        case (11, 13)
          pending = 3
          do while (pending > 0)
            if (f == 11) then
              call MPI_Waitsome(3, reqs, outc, idxs, sts, ierr)
            else
              call MPI_Testsome(3, reqs, outc, idxs, sts, ierr)
            end if
            if (outc == MPI_UNDEFINED) exit
            do k = 1, outc
              if (.not. note(idxs(k))) exit
            end do
            pending = pending - outc
          end do
        case (12)
          do
            call MPI_Testany(3, reqs, idx, done, st1, ierr)
            if (done .and. idx == MPI_UNDEFINED) exit
            if (done) then
              if (.not. note(idx)) exit
            end if
          end do
        end select
        if (.not. all(hit) .or. selfin /= 9000 + f * 100 + c) mine(2) = mine(2) + 1
#ifndef USE_F08
      case (14)
        selfout = 14000 + c
        selfin = -1
        call MPIX_Neighbor_allgather_init(sb, n, MPI_INTEGER, rb, n, MPI_INTEGER, g, MPI_INFO_NULL, reqs(1), ierr)
        call MPI_Send_init(selfout, 1, MPI_INTEGER, me, 8, MPI_COMM_WORLD, reqs(2), ierr)
        call MPI_Recv_init(selfin, 1, MPI_INTEGER, me, 8, MPI_COMM_WORLD, reqs(3), ierr)
        call MPI_Startall(3, reqs, ierr)
        call MPI_Waitall(3, reqs, sts, ierr)
        if (selfin /= 14000 + c) mine(2) = mine(2) + 1
        do k = 1, 3
          call MPI_Request_free(reqs(k), ierr)
        end do
#endif
      end select
      if (ierr /= MPI_SUCCESS) mine(2) = mine(2) + 1
      do i = 1, deg
        s = src(i)
        j = 0
        if (f == 1 .or. f == 3 .or. f == 6 .or. f == 8 .or. f == 12 .or. f == 13) then
          ! the k-th receive slot naming s takes s's k-th send slot naming this rank
          sdst = [mod(s + 1, p), mod(s + 2, p), mod(s - 1 + p, p), s]
          seen = count(src(1:i - 1) == s)
          do k = 1, deg
            if (sdst(k) == me) then
              if (seen == 0) exit
              seen = seen - 1
            end if
          end do
          j = k - 1
        end if
        do u = 1, n
          mine(1) = mine(1) + 1
          if (rb((i - 1) * n + u) /= val(s, c, f, j, u)) mine(2) = mine(2) + 1
        end do
      end do
    end do
    deallocate (sb, rb)
  end do
  call MPI_Reduce(mine, total, 2, MPI_INTEGER8, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (me == 0) then
    if (total(2) == 0) then
      write (*, '(a,a,a,i0,a,i0,a,i0,a)') "fortran_nbr (", api, "): ", forms * calls, " calls, ", total(1), &
        " values checked on ", p, " ranks, 0 wrong"
    else
      write (*, '(a,a,a,i0,a,i0,a,i0,a,i0,a)') "fortran_nbr (", api, "): ", forms * calls, " calls, ", total(1), &
        " values checked on ", p, " ranks, ", total(2), " WRONG"
    end if
  end if
  call MPI_Comm_free(g, ierr)
  call MPI_Finalize(ierr)

contains

  ! A completed request's index (from 1): counted wrong when out of range or seen twice.
  logical function note(i)
    integer, intent(in) :: i
    note = i >= 1 .and. i <= 3
    if (.not. note) then
      mine(2) = mine(2) + 1
      return
    end if
    if (hit(i)) mine(2) = mine(2) + 1
    hit(i) = .true.
  end function note

  integer function val(r, c, f, j, u)
    integer, intent(in) :: r, c, f, j, u
    val = r * 100000 + mod(c, 97) * 1000 + f * 100 + j * 20 + u
  end function val

end program fortran_nbr
