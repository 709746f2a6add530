import { clearRows } from './report';

export default function globalSetup(): void {
  clearRows();
}
